package status

import (
	"net"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// renderFailed records which pools fail since when and tells the notifier:
// a pool's own failure names that pool; a failure as a whole is every
// served pool's, since none of them could be rendered.
func (rec *Recorder) renderFailed(f *pipeline.Failure, now time.Time) {
	var notices []source.Notice
	rec.mu.Lock()
	if rec.failingSince == nil {
		rec.failingSince = map[string]time.Time{}
	}
	for _, pf := range f.Pools() {
		if _, ok := rec.failingSince[pf.Pool]; !ok {
			rec.failingSince[pf.Pool] = now
		}
		consequence := "serving the last good render"
		if !pf.Served {
			consequence = "never rendered: nothing is served for this pool"
		}
		notices = append(notices, source.Notice{Kind: source.NoticeRenderFailed, Pool: pf.Pool, Err: pf.Err,
			Message: "rendering failed; " + consequence + ": " + pf.Err.Error()})
	}
	rec.mu.Unlock()
	if whole := f.Whole(); whole != nil {
		if snap := rec.served(); snap != nil {
			for _, name := range snap.Names() {
				notices = append(notices, source.Notice{Kind: source.NoticeRenderFailed, Pool: name, Err: whole,
					Message: "rendering failed; serving the last good render: " + whole.Error()})
			}
		}
	}
	for _, n := range notices {
		rec.tell(n)
	}
}

// recovered forgets, from failingSince, the failures of the pools snap
// renders anew, and reports whether no pool of snap failed.
func recovered(failingSince map[string]time.Time, snap *pipeline.Snapshot) bool {
	for name := range failingSince {
		if _, failing := snap.Failed(name); !failing {
			delete(failingSince, name)
		}
	}
	return snap.AllRendered()
}

// Refused tells the notifier about a node the skew gate stubbed. The
// message names the node's address without its port, so one node's boot
// loop repeats one message (which the event recorder counts) rather than
// making a new one per connection.
func (rec *Recorder) Refused(r skewgate.Request, d skewgate.Decision) {
	if rec.notify == nil {
		return
	}
	why, _, _ := strings.Cut(d.Message, "\n")
	rec.tell(source.Notice{Kind: source.NoticeNodeRefused, Pool: r.Pool,
		Message: "node at " + node(r.RemoteAddr, r.UserAgent) + " refused (" + d.Reason + ", reference " + d.ID + "): " + why})
}

// node names a client for people: "10.0.0.5 (Ignition v2.27.0)", without
// the connection's port.
func node(remoteAddr, userAgent string) string {
	client := "an unknown client"
	if v, ok := skewgate.ParseUserAgent(userAgent); ok {
		client = "Ignition " + v.String()
	}
	return hostOf(remoteAddr) + " (" + client + ")"
}

// hostOf is a remote address without its port.
func hostOf(remoteAddr string) string {
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return h
	}
	return remoteAddr
}
