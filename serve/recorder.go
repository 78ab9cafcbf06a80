package serve

import (
	"log/slog"
	"sync"
	"time"

	"github.com/ignition-mcs/mcs/nodefail"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// recorder is the status recorder: how renders went, a reload stuck, the
// nodes kept waiting and who fetched what, for /status, the metrics and
// the notifier. The Reloader writes it through renderHealth; the request
// path through waiting and the fetch log.
type recorder struct {
	log     *slog.Logger
	m       *renderMetrics
	gate    *skewgate.Gate // shown, never changed here; nil: none
	source  string
	maxSpec string
	notify  func(source.Notice) // nil: nobody is told
	served  func() *Snapshot
	backlog func() source.Backlog // nil: a source that cannot lag

	waiting  waitingNodes
	fetches  fetchLog
	failures func() nodefail.Status // nil: none
	cert     *certificateState

	mu      sync.Mutex // guards the render health below
	lastErr *RenderError
	// policyErr is why the source's newest skew policy was refused.
	policyErr string
	lastTry   time.Time
	stuck     *stuckReload // a load running past the reload timeout
	warnings  []string     // what the newest load skipped
	// errSince is when the render began failing, failingSince when each
	// pool did; zero and absent while they render.
	errSince     time.Time
	failingSince map[string]time.Time
}

// renderHealth is what a Reloader tells the status recorder, besides the
// snapshots it swaps in (Server.Swap records those).
type renderHealth interface {
	warned(warnings []string)
	policyRefused(err error)
	took(d time.Duration)
	failed(f *failure)
	setStuck(st *stuckReload)
}

// RenderError is why the newest render failed, for /status.
type RenderError struct {
	Time    time.Time `json:"time"`
	Message string    `json:"message"`
	// Since is when the render began failing (Time is the latest attempt).
	Since time.Time `json:"since"`
	// Pools are the pools whose own renders failed, each serving its last
	// good render; empty when the render as a whole failed.
	Pools []string `json:"pools,omitempty"`
}

// rendered records snap, just swapped in, as the newest render, clearing
// the render error.
func (rec *recorder) rendered(snap *Snapshot) {
	rec.mu.Lock()
	rec.lastErr, rec.lastTry = nil, time.Now()
	if recovered(rec.failingSince, snap) {
		rec.errSince = time.Time{}
	}
	rec.mu.Unlock()
	rec.waiting.resolved(snap)
	rec.m.gen.Set(float64(snap.Generation))
	rec.m.failing.Set(0)
	rec.m.lastOK.Set(float64(snap.Built.Unix()))
	rec.m.encoded.Add(float64(snap.Rerendered))
	rec.m.carried.Add(float64(snap.Carried))
}

// firstRenderFailed is why the newest render failed while nothing is
// served yet, or "" when something is served or no attempt has ended.
func firstRenderFailed(rec *recorder) string {
	if rec.served() != nil {
		return ""
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.lastErr == nil {
		return ""
	}
	return rec.lastErr.Message
}

// took records how long a render attempt took.
func (rec *recorder) took(d time.Duration) { rec.m.duration.Observe(d.Seconds()) }

// failed records a failed render; the current snapshot keeps serving.
func (rec *recorder) failed(f *failure) {
	now := time.Now()
	err := f.error()
	rec.mu.Lock()
	if rec.errSince.IsZero() {
		rec.errSince = now
	}
	rec.lastErr, rec.lastTry = &RenderError{Time: now, Message: err.Error(), Since: rec.errSince}, now
	for _, pf := range f.pools {
		rec.lastErr.Pools = append(rec.lastErr.Pools, pf.pool)
	}
	rec.mu.Unlock()
	rec.m.errors.Inc()
	rec.m.failing.Set(1)
	rec.renderFailed(f, now)
}

// warned records what the newest load skipped, logging what is new.
func (rec *recorder) warned(ws []string) {
	rec.mu.Lock()
	prev := rec.warnings
	rec.warnings = ws
	rec.mu.Unlock()
	old := map[string]bool{}
	for _, w := range prev {
		old[w] = true
	}
	for _, w := range ws {
		if !old[w] {
			rec.log.Warn("source: not read", "warning", w)
		}
	}
}

// policyRefused records why the source's newest skew policy was refused;
// nil: it was not.
func (rec *recorder) policyRefused(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	rec.mu.Lock()
	rec.policyErr = msg
	rec.mu.Unlock()
}

// setStuck records a stuck load, or with nil that none is.
func (rec *recorder) setStuck(st *stuckReload) {
	rec.mu.Lock()
	rec.stuck = st
	rec.mu.Unlock()
	if st == nil {
		rec.m.stuck.Set(0)
		return
	}
	rec.m.stuck.Set(1)
	rec.m.stuckTotal.Inc()
}

// tell hands n to the notifier, if any.
func (rec *recorder) tell(n source.Notice) {
	if rec.notify != nil {
		rec.notify(n)
	}
}
