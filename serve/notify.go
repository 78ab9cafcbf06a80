package serve

import (
	"errors"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// failure is a render that failed: as a whole (err: no pool rendered anew),
// or in some pools only, each serving its last good render.
type failure struct {
	err   error
	pools []poolFailure // sorted by pool; empty when err is set
}

// poolFailure is one pool's render failure; served says whether the pool
// serves a render of before (a pool that never rendered serves nothing).
type poolFailure struct {
	pool   string
	err    error
	served bool
}

// markServed notes, for each failing pool, whether snap (the snapshot
// served after the attempt; nil: none) still serves it.
func (f *failure) markServed(snap *Snapshot) {
	for i := range f.pools {
		f.pools[i].served = snap != nil && snap.pools[f.pools[i].pool] != nil
	}
}

// outcome says what is served despite f, for the log line and notices.
func (f *failure) outcome(snap *Snapshot) string {
	if snap == nil {
		return "nothing is served until a render succeeds"
	}
	if f.err != nil {
		return "serving the last good render"
	}
	served, never := 0, 0
	for _, pf := range f.pools {
		if pf.served {
			served++
		} else {
			never++
		}
	}
	switch {
	case never == 0:
		return "the failing pools serve their last good render"
	case served == 0:
		return "the failing pools never rendered: nothing is served for them"
	}
	return "each failing pool serves its last good render, if it ever rendered"
}

// wholeFailure is a render that failed as a whole.
func wholeFailure(err error) *failure { return &failure{err: err} }

// poolsFailed is the failure of the pools in failed, or nil when none did.
func poolsFailed(failed map[string]error) *failure {
	if len(failed) == 0 {
		return nil
	}
	f := &failure{}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		f.pools = append(f.pools, poolFailure{pool: name, err: failed[name]})
	}
	return f
}

// error is the failure as Reload returns it and logs and /status show it.
func (f *failure) error() error {
	if f.err != nil {
		return f.err
	}
	errs := make([]error, len(f.pools))
	for i, pf := range f.pools {
		errs[i] = &poolError{Pool: pf.pool, Err: pf.err, Served: pf.served}
	}
	return errors.Join(errs...)
}

// poolError is one pool's render failure as an error.
type poolError struct {
	Pool   string
	Err    error
	Served bool // the pool serves a render of before
}

func (e *poolError) Error() string {
	if !e.Served {
		return "pool " + e.Pool + " (never rendered: nothing is served for it): " + e.Err.Error()
	}
	return "pool " + e.Pool + " (serving its last good render): " + e.Err.Error()
}

func (e *poolError) Unwrap() error { return e.Err }

// renderFailed records which pools fail since when and tells the notifier:
// a pool's own failure names that pool; a failure as a whole is every
// served pool's, since none of them could be rendered.
func (rec *recorder) renderFailed(f *failure, now time.Time) {
	var notices []source.Notice
	rec.mu.Lock()
	if rec.failingSince == nil {
		rec.failingSince = map[string]time.Time{}
	}
	for _, pf := range f.pools {
		if _, ok := rec.failingSince[pf.pool]; !ok {
			rec.failingSince[pf.pool] = now
		}
		consequence := "serving the last good render"
		if !pf.served {
			consequence = "never rendered: nothing is served for this pool"
		}
		notices = append(notices, source.Notice{Kind: source.NoticeRenderFailed, Pool: pf.pool, Err: pf.err,
			Message: "rendering failed; " + consequence + ": " + pf.err.Error()})
	}
	rec.mu.Unlock()
	if f.err != nil {
		if snap := rec.served(); snap != nil {
			for _, name := range snap.names {
				notices = append(notices, source.Notice{Kind: source.NoticeRenderFailed, Pool: name, Err: f.err,
					Message: "rendering failed; serving the last good render: " + f.err.Error()})
			}
		}
	}
	for _, n := range notices {
		rec.tell(n)
	}
}

// recovered forgets, from failingSince, the failures of the pools snap
// renders anew, and reports whether no pool of snap failed.
func recovered(failingSince map[string]time.Time, snap *Snapshot) bool {
	for name := range failingSince {
		if _, failing := snap.failed[name]; !failing {
			delete(failingSince, name)
		}
	}
	return len(snap.failed) == 0
}

// refused tells the notifier about a node the skew gate stubbed. The
// message names the node's address without its port, so one node's boot
// loop repeats one message (which the event recorder counts) rather than
// making a new one per connection.
func (rec *recorder) refused(r skewgate.Request, d skewgate.Decision) {
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
