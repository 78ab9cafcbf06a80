package serve

import (
	"net"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// poolError is one pool's render failure; the pool keeps serving its last
// good render. A Reloader joins them (errors.Join) into its error.
type poolError struct {
	Pool string
	Err  error
}

func (e *poolError) Error() string {
	return "pool " + e.Pool + " (serving its last good render): " + e.Err.Error()
}

func (e *poolError) Unwrap() error { return e.Err }

// poolErrors splits a render error into its pools' failures; whole is
// false when some part of err names no pool (every pool failed).
func poolErrors(err error) (pools []*poolError, whole bool) {
	if pe, ok := err.(*poolError); ok {
		return []*poolError{pe}, false
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil, true
	}
	for _, e := range joined.Unwrap() {
		p, w := poolErrors(e)
		pools = append(pools, p...)
		whole = whole || w
	}
	return pools, whole
}

// notify hands n to the configured notifier, if any.
func (s *Server) notify(n source.Notice) {
	if s.cfg.Notify != nil {
		s.cfg.Notify(n)
	}
}

// renderFailed records which pools fail since when and tells the notifier:
// a pool's own failure names that pool; any other failure is every served
// pool's, since none of them could be rendered.
func (s *Server) renderFailed(pools []*poolError, whole bool, err error, now time.Time) {
	var notices []source.Notice
	s.mu.Lock()
	if s.failingSince == nil {
		s.failingSince = map[string]time.Time{}
	}
	for _, pe := range pools {
		if _, ok := s.failingSince[pe.Pool]; !ok {
			s.failingSince[pe.Pool] = now
		}
		notices = append(notices, source.Notice{Kind: source.NoticeRenderFailed, Pool: pe.Pool, Err: pe.Err,
			Message: "rendering failed; serving the last good render: " + pe.Err.Error()})
	}
	s.mu.Unlock()
	if whole {
		if snap := s.snap.Load(); snap != nil {
			for _, name := range snap.names {
				notices = append(notices, source.Notice{Kind: source.NoticeRenderFailed, Pool: name, Err: err,
					Message: "rendering failed; serving the last good render: " + err.Error()})
			}
		}
	}
	for _, n := range notices {
		s.notify(n)
	}
}

// recovered forgets the failures of the pools snap renders anew. Called
// with s.mu held.
func (s *Server) recovered(snap *Snapshot) {
	for name := range s.failingSince {
		if _, failing := snap.failed[name]; !failing {
			delete(s.failingSince, name)
		}
	}
	if len(snap.failed) == 0 {
		s.errSince = time.Time{}
	}
}

// refused tells the notifier about a node the skew gate stubbed. The
// message names the node's address without its port, so one node's boot
// loop repeats one message (which the event recorder counts) rather than
// making a new one per connection.
func (s *Server) refused(r skewgate.Request, d skewgate.Decision) {
	if s.cfg.Notify == nil {
		return
	}
	why, _, _ := strings.Cut(d.Message, "\n")
	s.notify(source.Notice{Kind: source.NoticeNodeRefused, Pool: r.Pool,
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
