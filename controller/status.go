package controller

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ignition-mcs/mcs/render"
)

// statusDoc is what /status reports: who leads, and per pool what was
// rendered and written (or, in a dry run, would have been).
type statusDoc struct {
	Identity string `json:"identity"`
	Leader   string `json:"leader"`  // the holder last observed
	Leading  bool   `json:"leading"` // this replica writes
	Lease    string `json:"lease"`
	DryRun   bool   `json:"dryRun"`
	Prune    bool   `json:"prune"`
	Keep     int    `json:"keep"`
	Synced   bool   `json:"synced"`

	LastSync  time.Time `json:"lastSync,omitzero"`
	LastError string    `json:"lastError,omitempty"`

	Pools map[string]*poolStatus `json:"pools"`
	// Pruned are the rendered configs the last prune deleted (in a dry
	// run: would have deleted).
	Pruned []string `json:"pruned,omitempty"`
}

// poolStatus is one pool as the leader last saw it.
type poolStatus struct {
	Rendered string   `json:"rendered,omitempty"` // the config its MachineConfigs render to
	Spec     string   `json:"spec,omitempty"`
	MinSpec  string   `json:"minSpec,omitempty"`
	Sources  []string `json:"sources,omitempty"`
	Degraded string   `json:"degraded,omitempty"` // why it does not render
	// Waiting says what the pool waits for before it is written (a guard:
	// reason and message, as its RenderPending condition says).
	Waiting   string `json:"waiting,omitempty"`
	LastError string `json:"lastError,omitempty"`
	// LastWrite and Writes are this replica's writes for the pool (in a
	// dry run, those it would have made), most recent last, at most 20.
	LastWrite time.Time `json:"lastWrite,omitzero"`
	Writes    []string  `json:"writes,omitempty"`
}

const maxWrites = 20

// statusBook is what this replica knows of its pools, for /status, the
// log and the per-pool metrics.
type statusBook struct {
	mu     sync.Mutex
	doc    statusDoc
	m      *metrics
	log    *slog.Logger
	dryRun bool
}

func newStatusBook(cfg Config, m *metrics, log *slog.Logger) *statusBook {
	return &statusBook{m: m, log: log, dryRun: cfg.DryRun, doc: statusDoc{Identity: cfg.Identity, DryRun: cfg.DryRun, Prune: cfg.Prune,
		Keep: cfg.Keep, Lease: statusLease(cfg), Pools: map[string]*poolStatus{}}}
}

// statusLease is the Lease /status names: none in a dry run, which takes no
// part in leader election.
func statusLease(cfg Config) string {
	if cfg.DryRun {
		return ""
	}
	return cfg.LeaseNamespace + "/" + cfg.LeaseName
}

// copy returns a copy of what /status reports.
func (b *statusBook) copy() statusDoc {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.doc
	s.Pools = make(map[string]*poolStatus, len(b.doc.Pools))
	for k, v := range b.doc.Pools {
		p := *v
		p.Writes = slices.Clone(v.Writes)
		p.Sources = slices.Clone(v.Sources)
		s.Pools[k] = &p
	}
	s.Pruned = slices.Clone(b.doc.Pruned)
	return s
}

// pool returns the pool's status entry; b.mu is held.
func (b *statusBook) pool(name string) *poolStatus {
	p := b.doc.Pools[name]
	if p == nil {
		p = &poolStatus{}
		b.doc.Pools[name] = p
	}
	return p
}

func (b *statusBook) setRendered(res *render.Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pool(res.Pool)
	p.Rendered, p.Spec, p.MinSpec, p.Sources, p.Degraded = res.Name, res.Spec.String(), res.MinSpec.String(), res.MachineConfigs, ""
	b.m.degraded.WithLabelValues(res.Pool).Set(0)
}

func (b *statusBook) setDegraded(pool, msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pool(pool).Degraded = msg
	b.m.degraded.WithLabelValues(pool).Set(1)
}

// setWaiting records what the pool waits for (nil: nothing), logging a
// change of it once.
func (b *statusBook) setWaiting(pool string, w *wait) {
	now := ""
	if w != nil {
		now = w.Error()
	}
	b.mu.Lock()
	p := b.pool(pool)
	was := p.Waiting
	p.Waiting = now
	b.mu.Unlock()
	v := 0.0
	if w != nil {
		v = 1
	}
	b.m.waiting.WithLabelValues(pool).Set(v)
	switch {
	case now == was:
	case w != nil:
		b.log.Warn("pool waits; it keeps its rendered config", "pool", pool, "reason", w.Reason, "waitingFor", w.Message)
	default:
		b.log.Info("pool no longer waits", "pool", pool, "was", was)
	}
}

func (b *statusBook) wrote(pool, what string) {
	now := time.Now()
	if b.dryRun {
		what = "dry run: would have " + what
	}
	b.log.Info(what, "pool", pool, "dryRun", b.dryRun)
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pool(pool)
	p.LastWrite = now
	p.Writes = append(p.Writes, now.UTC().Format(time.RFC3339Nano)+" "+what)
	if len(p.Writes) > maxWrites {
		p.Writes = slices.Delete(p.Writes, 0, len(p.Writes)-maxWrites)
	}
	b.m.lastWrite.WithLabelValues(pool).Set(float64(now.UnixNano()) / 1e9)
}

// report records a pool's sync error (nil clears it). A sync that ends
// well books no pool: one queued before its pool was deleted ends so after
// forgetPools dropped it, and must not bring it back.
func (b *statusBook) report(pool string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		if p := b.doc.Pools[pool]; p != nil {
			p.LastError = ""
		}
		return
	}
	b.log.Error("syncing pool; retrying", "pool", pool, "err", err)
	b.pool(pool).LastError = err.Error()
}

// forgetPools drops the status of pools that no longer exist.
func (b *statusBook) forgetPools(present map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, name := range slices.Collect(maps.Keys(b.doc.Pools)) {
		if _, ok := present[name]; !ok {
			delete(b.doc.Pools, name)
			for _, g := range []*prometheus.GaugeVec{b.m.degraded, b.m.lastWrite, b.m.waiting, b.m.osImageURLOverride} {
				g.DeleteLabelValues(name)
			}
		}
	}
}

func (b *statusBook) finishSync(at time.Time, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.doc.LastSync = at
	b.doc.LastError = ""
	if err != nil {
		b.doc.LastError = err.Error()
	}
}

func (b *statusBook) setPruned(names []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.doc.Pruned = names
}

// observeLeader records the Lease holder last observed.
func (b *statusBook) observeLeader(identity string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.doc.Leader = identity
}

// setLeading records whether this replica (self) leads; it returns what it was.
func (b *statusBook) setLeading(on bool, self string) (was bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	was = b.doc.Leading
	b.doc.Leading = on
	if on {
		b.doc.Leader = self
	}
	return was
}

// Handler serves /status, /metrics (from g), /healthz (the process runs)
// and /readyz (the caches have synced, so a standby can take over).
func (c *Controller) Handler(g prometheus.Gatherer) http.Handler {
	r := chi.NewRouter()
	r.Get("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		doc := c.book.copy()
		doc.Synced = c.src.Synced()
		_ = enc.Encode(doc)
	})
	r.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	r.Get("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !c.src.Synced() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return r
}
