package status

import (
	"crypto/tls"
	"log/slog"
	"sync"
	"time"

	"github.com/ignition-mcs/mcs/nodefail"
	"github.com/ignition-mcs/mcs/serve/fetchlog"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Recorder.
type Config struct {
	Logger *slog.Logger
	// Registry receives the recorder's metrics.
	Registry prometheus.Registerer
	// Gate is shown in /status, never changed here; nil: none.
	Gate *skewgate.Gate
	// Source names what is served; MaxSpec says the spec ceiling renders
	// are held to and where it came from.
	Source, MaxSpec string
	// Notify, when set, is told about refused nodes, failed renders, first
	// fetches and failed certificate reloads; it must not block.
	Notify func(source.Notice)
	// Served returns the snapshot being served, or nil before the first.
	Served func() *pipeline.Snapshot
	// ServingCert, when set, returns the certificate chain the TLS
	// listener serves.
	ServingCert func() (*tls.Certificate, error)
	// Backlog, when set, says what the source has seen change and not read
	// yet.
	Backlog func() source.Backlog
	// Failures, when set, returns the first-boot failures nodes reported.
	Failures func() nodefail.Status
	// Waiting is where the request path notes the nodes it keeps waiting.
	Waiting *WaitingNodes
}

// New returns a Recorder, or the error registering its metrics.
func New(cfg Config) (*Recorder, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Served == nil {
		cfg.Served = func() *pipeline.Snapshot { return nil }
	}
	if cfg.Waiting == nil {
		cfg.Waiting = &WaitingNodes{}
	}
	m, err := newRenderMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	return &Recorder{log: cfg.Logger, m: m, gate: cfg.Gate, source: cfg.Source, maxSpec: cfg.MaxSpec, notify: cfg.Notify,
		served: cfg.Served, backlog: cfg.Backlog, waiting: cfg.Waiting, failures: cfg.Failures,
		cert: &certificateState{served: cfg.ServingCert}}, nil
}

// Recorder is the status recorder: how renders went, a reload stuck, the
// nodes kept waiting and who fetched what, for /status, the metrics and
// the notifier. The Reloader writes it through pipeline.Health; the request
// path through the waiting nodes and the fetch log.
type Recorder struct {
	log     *slog.Logger
	m       *renderMetrics
	gate    *skewgate.Gate // shown, never changed here; nil: none
	source  string
	maxSpec string
	notify  func(source.Notice) // nil: nobody is told
	served  func() *pipeline.Snapshot
	backlog func() source.Backlog // nil: a source that cannot lag

	waiting  *WaitingNodes
	fetches  fetchlog.Log
	failures func() nodefail.Status // nil: none
	cert     *certificateState

	mu      sync.Mutex // guards the render health below
	lastErr *RenderError
	// policyErr is why the source's newest skew policy was refused.
	policyErr string
	lastTry   time.Time
	stuck     *pipeline.Stuck // a load running past the reload timeout
	warnings  []string        // what the newest load skipped
	// errSince is when the render began failing, failingSince when each
	// pool did; zero and absent while they render.
	errSince     time.Time
	failingSince map[string]time.Time
}

// The Recorder is the Reloader's pipeline.Health.
var _ pipeline.Health = (*Recorder)(nil)

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

// Rendered records snap, just swapped in, as the newest render, clearing
// the render error.
func (rec *Recorder) Rendered(snap *pipeline.Snapshot) {
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

// FirstRenderFailed is why the newest render failed while nothing is
// served yet, or "" when something is served or no attempt has ended.
func (rec *Recorder) FirstRenderFailed() string {
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

// Took records how long a render attempt took.
func (rec *Recorder) Took(d time.Duration) { rec.m.duration.Observe(d.Seconds()) }

// Failed records a failed render; the current snapshot keeps serving.
func (rec *Recorder) Failed(f *pipeline.Failure) {
	now := time.Now()
	err := f.Err()
	rec.mu.Lock()
	if rec.errSince.IsZero() {
		rec.errSince = now
	}
	rec.lastErr, rec.lastTry = &RenderError{Time: now, Message: err.Error(), Since: rec.errSince}, now
	for _, pf := range f.Pools() {
		rec.lastErr.Pools = append(rec.lastErr.Pools, pf.Pool)
	}
	rec.mu.Unlock()
	rec.m.errors.Inc()
	rec.m.failing.Set(1)
	rec.renderFailed(f, now)
}

// Warned records what the newest load skipped, logging what is new.
func (rec *Recorder) Warned(ws []string) {
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

// PolicyRefused records why the source's newest skew policy was refused;
// nil: it was not.
func (rec *Recorder) PolicyRefused(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	rec.mu.Lock()
	rec.policyErr = msg
	rec.mu.Unlock()
}

// SetStuck records a stuck load, or with nil that none is.
func (rec *Recorder) SetStuck(st *pipeline.Stuck) {
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
func (rec *Recorder) tell(n source.Notice) {
	if rec.notify != nil {
		rec.notify(n)
	}
}
