package controller

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
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
	Rendered  string   `json:"rendered,omitempty"` // the config its MachineConfigs render to
	Spec      string   `json:"spec,omitempty"`
	MinSpec   string   `json:"minSpec,omitempty"`
	Sources   []string `json:"sources,omitempty"`
	Degraded  string   `json:"degraded,omitempty"` // why it does not render
	LastError string   `json:"lastError,omitempty"`
	// LastWrite and Writes are this replica's writes for the pool (in a
	// dry run, those it would have made), most recent last, at most 20.
	LastWrite time.Time `json:"lastWrite,omitzero"`
	Writes    []string  `json:"writes,omitempty"`
}

const maxWrites = 20

// statusCopy returns a copy of what /status reports.
func (c *Controller) statusCopy() statusDoc {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.status
	s.Synced = c.src.Synced()
	s.Pools = make(map[string]*poolStatus, len(c.status.Pools))
	for k, v := range c.status.Pools {
		p := *v
		p.Writes = slices.Clone(v.Writes)
		p.Sources = slices.Clone(v.Sources)
		s.Pools[k] = &p
	}
	s.Pruned = slices.Clone(c.status.Pruned)
	return s
}

// pool returns the pool's status entry; c.mu is held.
func (c *Controller) pool(name string) *poolStatus {
	p := c.status.Pools[name]
	if p == nil {
		p = &poolStatus{}
		c.status.Pools[name] = p
	}
	return p
}

func (c *Controller) setRendered(res *render.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pool(res.Pool)
	p.Rendered, p.Spec, p.MinSpec, p.Sources, p.Degraded = res.Name, res.Spec.String(), res.MinSpec.String(), res.MachineConfigs, ""
	c.m.degraded.WithLabelValues(res.Pool).Set(0)
}

func (c *Controller) setDegraded(pool, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pool(pool).Degraded = msg
	c.m.degraded.WithLabelValues(pool).Set(1)
}

func (c *Controller) wrote(pool, what string) {
	now := time.Now()
	if c.cfg.DryRun {
		what = "dry run: would have " + what
	}
	c.log.Info(what, "pool", pool, "dryRun", c.cfg.DryRun)
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pool(pool)
	p.LastWrite = now
	p.Writes = append(p.Writes, now.UTC().Format(time.RFC3339Nano)+" "+what)
	if len(p.Writes) > maxWrites {
		p.Writes = slices.Delete(p.Writes, 0, len(p.Writes)-maxWrites)
	}
	c.m.lastWrite.WithLabelValues(pool).Set(float64(now.UnixNano()) / 1e9)
}

// report records a pool's sync error (nil clears it).
func (c *Controller) report(pool string, err error) {
	if err != nil {
		c.log.Error("syncing pool", "pool", pool, "err", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pool(pool)
	p.LastError = ""
	if err != nil {
		p.LastError = err.Error()
	}
}

// forgetPools drops the status of pools that no longer exist.
func (c *Controller) forgetPools(present map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range slices.Collect(maps.Keys(c.status.Pools)) {
		if _, ok := present[name]; !ok {
			delete(c.status.Pools, name)
			c.m.degraded.DeleteLabelValues(name)
			c.m.lastWrite.DeleteLabelValues(name)
		}
	}
}

func (c *Controller) finishSync(at time.Time, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status.LastSync = at
	c.status.LastError = ""
	if err != nil {
		c.status.LastError = err.Error()
	}
}

func (c *Controller) setPruned(names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status.Pruned = names
}

// Handler serves /status, /metrics (from g), /healthz (the process runs)
// and /readyz (the caches have synced, so a standby can take over).
func (c *Controller) Handler(g prometheus.Gatherer) http.Handler {
	r := chi.NewRouter()
	r.Get("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(c.statusCopy())
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
