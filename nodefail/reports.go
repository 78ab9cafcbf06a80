package nodefail

import (
	"encoding/json"
	"errors"
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

// stages are the stage label values of the metric; any other stage is
// counted as "other". The PR's daemon reports firstboot-update; its
// comments name the others.
var stages = []string{"firstboot-update", "pivot", "kargs", "updateLayeredOS"}

// Bounds of what reports can make the server keep.
const (
	// entriesMax bounds the reports kept for /status (by pool, node and
	// stage); past it the least recently reported is forgotten.
	entriesMax = 64
	// addressesMax bounds the per-address limiters; when full, idle ones
	// go, then all.
	addressesMax = 4096
)

// Config configures Reports.
type Config struct {
	// Notify is told a FirstbootFailed notice for each report within its
	// address's limit, of a pool Known says is served; nil: nobody.
	Notify func(source.Notice)
	// Known reports whether the server serves a pool. Reports of other
	// pools are kept and counted (as pool "other") but told to nobody: a
	// caller cannot put Events on pools that do not exist.
	Known func(pool string) bool
	// Burst reports from one address are taken at once, then one per
	// Every; the rest are answered 202 and only counted (default 5 and 1m).
	Burst int
	Every time.Duration
	// Now is the clock (default time.Now).
	Now      func() time.Time
	Logger   *slog.Logger
	Registry prometheus.Registerer
}

// Reports takes the reports and keeps the latest of each key for /status.
type Reports struct {
	cfg     Config
	reports *prometheus.CounterVec // pool, stage
	limited prometheus.Counter

	mu        sync.Mutex
	entries   map[key]*Entry
	addresses map[string]*rate.Limiter
	dropped   uint64 // reports past their address's limit
}

type key struct{ pool, node, stage string }

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
	// Told says whether the pool is served, so the reports became a
	// FirstbootFailed Event on it.
	Told bool `json:"told"`
}

// Status is /status's section: the latest reports, most recent first,
// and how many reports were past their address's limit.
type Status struct {
	Reports []Entry `json:"reports"`
	Limited uint64  `json:"limited"`
}

// New returns Reports with its metrics on cfg.Registry.
func New(cfg Config) (*Reports, error) {
	if cfg.Burst <= 0 {
		cfg.Burst = 5
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Minute
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
	f, registered := prom.With(cfg.Registry)
	r := &Reports{cfg: cfg, entries: map[key]*Entry{}, addresses: map[string]*rate.Limiter{},
		reports: f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_node_failure_reports_total",
			Help: "First-boot failure reports taken from nodes (POST /v1/node-failure), by pool (other: not served) and stage (other: not one the daemon sends)."}, []string{"pool", "stage"}),
		limited: f.NewCounter(prometheus.CounterOpts{Name: "mcs_node_failure_reports_limited_total",
			Help: "First-boot failure reports past their address's rate limit: answered 202, counted here only."}),
	}
	return r, registered()
}

// ServeHTTP answers a report as the PR does: 202 {"status":"accepted"}
// for any well-formed report, whatever becomes of it (never a 5xx: the
// node must not retry-loop), 400 {"error","field"} naming the field of a
// bad one, 413 for a body over bodyMax, 405 for anything but POST.
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
	rs.take(host, rep)
	answer(w, http.StatusAccepted, map[string]string{"status": "accepted"})
}

func answer(w http.ResponseWriter, code int, body map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// take records a well-formed report from the address host: past the
// address's limit it is only counted; else it is counted by pool and
// stage, kept for /status and, for a served pool, told.
func (rs *Reports) take(host string, rep nodeReport) {
	now := rs.cfg.Now()
	known := rs.cfg.Known(rep.Pool)
	rs.mu.Lock()
	allowed := rs.limiter(host).AllowN(now, 1)
	if !allowed {
		rs.dropped++
	}
	rs.mu.Unlock()
	if !allowed {
		rs.limited.Inc()
		return
	}
	msg := rep.message()
	k := key{rep.Pool, redact(rep.NodeID), rep.Stage}
	rs.mu.Lock()
	e := rs.entries[k]
	first := e == nil
	if first {
		rs.makeRoom()
		e = &Entry{Pool: k.pool, Node: k.node, Stage: k.stage, First: now}
		rs.entries[k] = e
	}
	e.Message, e.Count, e.Last, e.Told = msg, e.Count+1, now, known
	rs.mu.Unlock()
	pool, stage := "other", "other"
	if known {
		pool = rep.Pool
	}
	if slices.Contains(stages, rep.Stage) {
		stage = rep.Stage
	}
	rs.reports.WithLabelValues(pool, stage).Inc()
	if first {
		rs.cfg.Logger.Warn("node failed its first boot", "pool", k.pool, "node", k.node, "stage", k.stage, "served", known, "message", msg)
	}
	if known && rs.cfg.Notify != nil {
		rs.cfg.Notify(source.Notice{Kind: source.NoticeFirstbootFailed, Pool: rep.Pool, Message: msg})
	}
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

// makeRoom forgets the least recently reported entry when entriesMax are
// kept; rs.mu is held.
func (rs *Reports) makeRoom() {
	if len(rs.entries) < entriesMax {
		return
	}
	var oldest key
	var at time.Time
	for k, e := range rs.entries {
		if at.IsZero() || e.Last.Before(at) {
			oldest, at = k, e.Last
		}
	}
	delete(rs.entries, oldest)
}

// Status is the reports kept, most recent first.
func (rs *Reports) Status() Status {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	st := Status{Reports: make([]Entry, 0, len(rs.entries)), Limited: rs.dropped}
	for _, e := range rs.entries {
		st.Reports = append(st.Reports, *e)
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
