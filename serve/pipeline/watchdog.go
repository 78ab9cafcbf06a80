package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ignition-mcs/mcs/source"
)

// DefaultReloadTimeout is how long a load and render may run before the
// watchdog reports it stuck: a real tree renders in milliseconds.
const DefaultReloadTimeout = 30 * time.Second

// progress is what a running load last said it was reading.
type progress struct{ what atomic.Pointer[string] }

// Reading records what the load reads now (see source.Reading).
func (p *progress) Reading(what string) { p.what.Store(&what) }

func (p *progress) reading() string {
	if w := p.what.Load(); w != nil {
		return *w
	}
	return ""
}

// Stuck is a load running past the timeout.
type Stuck struct {
	since time.Time
	p     *progress
	// first says nothing was served when the load began.
	first bool
}

// Message says since when, what the load reads and what is served
// meanwhile, for /status.
func (s *Stuck) Message() string {
	msg := "reload stuck since " + s.since.UTC().Format(time.RFC3339)
	if w := s.p.reading(); w != "" {
		msg += ", reading " + w
	}
	return msg + "; " + s.consequence()
}

// consequence says what is served while the load is stuck.
func (s *Stuck) consequence() string {
	if s.first {
		return "nothing is served until a render succeeds"
	}
	return "serving the last good render"
}

// watch starts the watchdog of one load begun at start, returning the
// context the load runs under and the function that ends the watch. A load
// past the timeout is shown in /status, counted, and logged at WARN; when it
// ends, however late, that is cleared and logged.
func (r *Reloader) watch(ctx context.Context, start time.Time) (context.Context, func()) {
	p := &progress{}
	stuck := &Stuck{since: start, p: p, first: r.Server.Snapshot() == nil}
	var mu sync.Mutex
	fired, ended := false, false
	t := time.AfterFunc(r.timeout(), func() {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			return
		}
		fired = true
		r.health().SetStuck(stuck)
		r.log().Warn("reload stuck; "+stuck.consequence(), "source", r.Source.String(),
			"since", start, "reading", p.reading(), "timeout", r.timeout())
	})
	return source.WithProgress(ctx, p), func() {
		t.Stop()
		mu.Lock()
		defer mu.Unlock()
		ended = true
		if fired {
			r.health().SetStuck(nil)
			r.log().Info("stuck reload ended", "source", r.Source.String(), "after", time.Since(start).Round(time.Millisecond))
		}
	}
}

func (r *Reloader) timeout() time.Duration {
	if r.Timeout <= 0 {
		return DefaultReloadTimeout
	}
	return r.Timeout
}
