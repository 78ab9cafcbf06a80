package nodefail

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/ignition-mcs/mcs/internal/prom"
	"github.com/ignition-mcs/mcs/source"
)

// stages are the stage label values of the metrics; any other stage is
// counted as "other". The PR's daemon reports firstboot-update; its
// comments name the others.
var stages = []string{"firstboot-update", "pivot", "kargs", "updateLayeredOS"}

// Bounds of what reports can make the server keep.
const (
	// poolEntriesMax bounds the reports kept for /status per pool (by
	// node and stage): the first ones stay, later keys are counted as
	// not kept until entries age out, so a flood cannot evict a genuine
	// report.
	poolEntriesMax = 32
	// poolsMax bounds the pools with reports kept; past it the pool
	// reported least recently is forgotten.
	poolsMax = 256
	// entryAge is how long a report is kept after its key was last
	// reported.
	entryAge = 24 * time.Hour
	// nodesWindow is how recent a report must be for its node to count
	// in mcs_node_failure_nodes, which the alert reads.
	nodesWindow = time.Hour
	// addressesMax bounds the per-address limiters; when full, idle ones
	// go, then all.
	addressesMax = 4096
)

// Config configures Reports.
type Config struct {
	// Notify is told a FirstbootFailed notice for each report taken; nil:
	// nobody.
	Notify func(source.Notice)
	// Known reports whether a pool exists: served, or its newest render
	// failed. A report of another pool is refused 404: neither counted,
	// kept, logged nor told, so a caller cannot put an alert or an Event
	// on a pool that does not exist. nil: no pool exists.
	Known func(pool string) bool
	// Authorize, when set, checks that the request may report for pool
	// (a bearer token that fetches the pool's config); a refusal is
	// answered 401 with its text. nil: no authentication.
	Authorize func(r *http.Request, pool string) error
	// Burst reports from one address are taken at once, then one per
	// Every (default 5 and 1m); PoolBurst of one pool, then one per
	// PoolEvery (default 32 and 10s). The rest are answered 202 and only
	// counted.
	Burst, PoolBurst int
	Every, PoolEvery time.Duration
	// Now is the clock (default time.Now).
	Now      func() time.Time
	Logger   *slog.Logger
	Registry prometheus.Registerer
}

// Reports takes the reports and keeps the first of each key per pool for
// /status.
type Reports struct {
	cfg     Config
	reports *prometheus.CounterVec // pool, stage
	limited prometheus.Counter
	refused *prometheus.CounterVec // reason

	mu        sync.Mutex
	pools     map[string]*poolReports
	addresses map[string]*rate.Limiter
	dropped   uint64 // reports past a rate limit
	notKept   uint64 // reports taken with no room to keep them
}

// poolReports are one pool's kept reports and its rate limiter.
type poolReports struct {
	entries map[key]*Entry
	limiter *rate.Limiter
	last    time.Time
}

type key struct{ node, stage string }

// Entry is the latest report of one pool, node and stage, for /status.
type Entry struct {
	Pool  string `json:"pool"`
	Node  string `json:"nodeID"`
	Stage string `json:"stage"`
	// Message is what the Event says (redacted, the error cut).
	Message string    `json:"message"`
	Count   int       `json:"count"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	// Told says the reports became a FirstbootFailed Event on the pool
	// (always, now that only existing pools are taken).
	Told bool `json:"told"`
}

// Status is /status's section: the reports kept, most recent first, how
// many reports were past a rate limit and how many were taken but not
// kept (their pool held poolEntriesMax already).
type Status struct {
	Reports []Entry `json:"reports"`
	Limited uint64  `json:"limited"`
	NotKept uint64  `json:"notKept"`
}

// New returns Reports with its metrics on cfg.Registry.
func New(cfg Config) (*Reports, error) {
	cfg = withDefaults(cfg)
	f, registered := prom.With(cfg.Registry)
	r := &Reports{cfg: cfg, pools: map[string]*poolReports{}, addresses: map[string]*rate.Limiter{},
		reports: f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_node_failure_reports_total",
			Help: "First-boot failure reports taken from nodes (POST /v1/node-failure), by pool (only pools that exist) and stage (other: not one the daemon sends)."}, []string{"pool", "stage"}),
		limited: f.NewCounter(prometheus.CounterOpts{Name: "mcs_node_failure_reports_limited_total",
			Help: "First-boot failure reports past their address's or their pool's rate limit: answered 202, counted here only."}),
		refused: f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_node_failure_reports_refused_total",
			Help: "First-boot failure reports within their address's rate limit refused: unauthorized (no token for the pool, when tokens are on) or unknown-pool."}, []string{"reason"}),
	}
	if err := registered(); err != nil {
		return nil, err
	}
	if cfg.Registry != nil {
		if err := cfg.Registry.Register(nodesCollector{r}); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	return r, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Burst <= 0 {
		cfg.Burst = 5
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Minute
	}
	if cfg.PoolBurst <= 0 {
		cfg.PoolBurst = poolEntriesMax
	}
	if cfg.PoolEvery <= 0 {
		cfg.PoolEvery = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Known == nil {
		cfg.Known = func(string) bool { return false }
	}
	return cfg
}

// ServeHTTP answers a report as the PR does: 202 {"status":"accepted"}
// for a report taken or past a rate limit (never a 5xx: the node must not
// retry-loop), 400 {"error","field"} naming the field of a bad one, 413
// for a body over bodyMax, 401 without a token for the pool (when tokens
// are on), 404 for a pool that does not exist, 405 for anything but POST.
// A body is read (16 KiB at most, no side effect) before the address's
// limit, which comes before anything that leaves a trace.
func (rs *Reports) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed: " + r.Method + "; POST a report"})
		return
	}
	rep, err := decode(http.MaxBytesReader(w, r.Body, bodyMax))
	if err != nil {
		var fe *fieldError
		errors.As(err, &fe)
		code := http.StatusBadRequest
		if errors.As(err, new(*http.MaxBytesError)) {
			code = http.StatusRequestEntityTooLarge
		}
		answer(w, code, map[string]string{"error": err.Error(), "field": fe.Field})
		return
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !rs.allowAddress(host) {
		answer(w, http.StatusAccepted, map[string]string{"status": "accepted"})
		return
	}
	if rs.cfg.Authorize != nil {
		if err := rs.cfg.Authorize(r, rep.Pool); err != nil {
			rs.refused.WithLabelValues("unauthorized").Inc()
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcs"`)
			answer(w, http.StatusUnauthorized, map[string]string{"error": err.Error()})
			return
		}
	}
	if !rs.cfg.Known(rep.Pool) {
		rs.refused.WithLabelValues("unknown-pool").Inc()
		answer(w, http.StatusNotFound, map[string]string{"error": "pool: no MachineConfigPool " + rep.Pool + " here", "field": "pool"})
		return
	}
	rs.take(rep)
	answer(w, http.StatusAccepted, map[string]string{"status": "accepted"})
}

func answer(w http.ResponseWriter, code int, body map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// allowAddress takes one report of host's budget, counting it as limited
// when there is none left.
func (rs *Reports) allowAddress(host string) bool {
	rs.mu.Lock()
	ok := rs.limiter(host).AllowN(rs.cfg.Now(), 1)
	if !ok {
		rs.dropped++
	}
	rs.mu.Unlock()
	if !ok {
		rs.limited.Inc()
	}
	return ok
}

// take records a well-formed report of an existing pool: past the pool's
// limit it is only counted; else it is counted by pool and stage, kept for
// /status when its pool has room, logged when its key is new, and told.
func (rs *Reports) take(rep nodeReport) {
	now := rs.cfg.Now()
	msg := rep.message()
	k := key{redact(rep.NodeID), rep.Stage}
	rs.mu.Lock()
	pr := rs.pool(rep.Pool, now)
	if !pr.limiter.AllowN(now, 1) {
		rs.dropped++
		rs.mu.Unlock()
		rs.limited.Inc()
		return
	}
	pr.last = now
	e := pr.entries[k]
	first := e == nil
	if first && pr.room(now) {
		e = &Entry{Pool: rep.Pool, Node: k.node, Stage: k.stage, First: now}
		pr.entries[k] = e
	}
	kept := e != nil
	if kept {
		e.Message, e.Count, e.Last, e.Told = msg, e.Count+1, now, true
	} else {
		rs.notKept++
	}
	rs.mu.Unlock()
	stage := "other"
	if slices.Contains(stages, rep.Stage) {
		stage = rep.Stage
	}
	rs.reports.WithLabelValues(rep.Pool, stage).Inc()
	if first {
		rs.cfg.Logger.Warn("node failed its first boot", "pool", rep.Pool, "node", k.node, "stage", k.stage, "kept", kept, "message", msg)
	}
	if rs.cfg.Notify != nil {
		rs.cfg.Notify(source.Notice{Kind: source.NoticeFirstbootFailed, Pool: rep.Pool, Message: msg})
	}
}

// pool is name's reports, made when new (forgetting the pool reported
// least recently when poolsMax are kept); rs.mu is held.
func (rs *Reports) pool(name string, now time.Time) *poolReports {
	if pr := rs.pools[name]; pr != nil {
		return pr
	}
	if len(rs.pools) >= poolsMax {
		oldest := ""
		for n, pr := range rs.pools {
			if oldest == "" || pr.last.Before(rs.pools[oldest].last) {
				oldest = n
			}
		}
		delete(rs.pools, oldest)
	}
	pr := &poolReports{entries: map[key]*Entry{}, last: now,
		limiter: rate.NewLimiter(rate.Every(rs.cfg.PoolEvery), rs.cfg.PoolBurst)}
	rs.pools[name] = pr
	return pr
}

// room forgets the entries not reported for entryAge and reports whether
// another fits; rs.mu is held.
func (pr *poolReports) room(now time.Time) bool {
	if len(pr.entries) < poolEntriesMax {
		return true
	}
	for k, e := range pr.entries {
		if now.Sub(e.Last) > entryAge {
			delete(pr.entries, k)
		}
	}
	return len(pr.entries) < poolEntriesMax
}

// limiter is host's rate limiter; rs.mu is held.
func (rs *Reports) limiter(host string) *rate.Limiter {
	if l := rs.addresses[host]; l != nil {
		return l
	}
	if len(rs.addresses) >= addressesMax {
		now := rs.cfg.Now()
		for h, l := range rs.addresses {
			if l.TokensAt(now) >= float64(rs.cfg.Burst) {
				delete(rs.addresses, h) // idle: a new limiter is the same
			}
		}
		if len(rs.addresses) >= addressesMax {
			clear(rs.addresses)
		}
	}
	l := rate.NewLimiter(rate.Every(rs.cfg.Every), rs.cfg.Burst)
	rs.addresses[host] = l
	return l
}

// Status is the reports kept, most recent first, those not reported for
// entryAge left out.
func (rs *Reports) Status() Status {
	now := rs.cfg.Now()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	st := Status{Reports: []Entry{}, Limited: rs.dropped, NotKept: rs.notKept}
	for _, pr := range rs.pools {
		for _, e := range pr.entries {
			if now.Sub(e.Last) <= entryAge {
				st.Reports = append(st.Reports, *e)
			}
		}
	}
	slices.SortFunc(st.Reports, func(a, b Entry) int {
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		return cmpKey(a, b)
	})
	return st
}

func cmpKey(a, b Entry) int {
	for _, c := range [][2]string{{a.Pool, b.Pool}, {a.Node, b.Node}, {a.Stage, b.Stage}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// nodesDesc is the gauge the alert reads: distinct nodes, not reports, so
// that one node's retries, or one caller's, count once.
var nodesDesc = prometheus.NewDesc("mcs_node_failure_nodes",
	"Nodes of an existing pool whose first-boot failure report at a stage (other: not one the daemon sends) was taken in the last hour and kept.",
	[]string{"pool", "stage"}, nil)

// nodesCollector exposes mcs_node_failure_nodes from the kept reports.
type nodesCollector struct{ rs *Reports }

func (c nodesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- nodesDesc }

func (c nodesCollector) Collect(ch chan<- prometheus.Metric) {
	type ps struct{ pool, stage string }
	now := c.rs.cfg.Now()
	nodes := map[ps]map[string]bool{}
	c.rs.mu.Lock()
	for name, pr := range c.rs.pools {
		for k, e := range pr.entries {
			if now.Sub(e.Last) > nodesWindow {
				continue
			}
			stage := "other"
			if slices.Contains(stages, k.stage) {
				stage = k.stage
			}
			s := ps{name, stage}
			if nodes[s] == nil {
				nodes[s] = map[string]bool{}
			}
			nodes[s][k.node] = true
		}
	}
	c.rs.mu.Unlock()
	for s, n := range nodes {
		ch <- prometheus.MustNewConstMetric(nodesDesc, prometheus.GaugeValue, float64(len(n)), s.pool, s.stage)
	}
}
