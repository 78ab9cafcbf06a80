package admit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ignition-mcs/mcs/internal/text"
)

// defaultMaxBody bounds an AdmissionReview: an UPDATE carries the object
// twice, and the API server takes requests up to 3 MiB.
const defaultMaxBody = 8 << 20

// Defaults of the bounds on reviews under way. The deployed webhook's
// timeoutSeconds is 5: a review waits at most defaultQueueWait for a slot
// and then has defaultBudget to read its body and be answered, so the
// API server has its answer, or a quick failure, before it gives up.
const (
	defaultMaxReviews = 8
	defaultQueueWait  = time.Second
	defaultBudget     = 3 * time.Second
)

// errTooLarge is a body over Config.MaxBody.
var errTooLarge = errors.New("the AdmissionReview is larger than the webhook takes")

// MutatePath is where the API server sends AdmissionReviews.
const MutatePath = "/mutate"

// Config configures a Webhook.
type Config struct {
	Logger   *slog.Logger
	Registry prometheus.Registerer // metrics; nil: a private registry
	Gatherer prometheus.Gatherer   // served at /metrics; nil: none served
	// Deny refuses a person's write above the ceiling; OpenShift's own
	// controllers are warned instead. A review changes nothing but its
	// answer: its body, who it says wrote, is anyone's to send. Events and
	// the count of writes above the ceiling come from the watch of what
	// was stored (admit/stored).
	Deny    bool
	MaxBody int64            // default defaultMaxBody
	Now     func() time.Time // default time.Now
	// MaxReviews bounds the reviews under way, shared fairly between
	// client addresses; one more waits up to QueueWait for a slot, then is
	// answered 503 at once. Budget bounds each review from its slot on,
	// body read included.
	MaxReviews int           // default defaultMaxReviews
	QueueWait  time.Duration // default defaultQueueWait
	Budget     time.Duration // default defaultBudget
	// Admin, if not nil, says whether a request may read /status and
	// /metrics (the MachineConfigs' names, pools and problems): others
	// are answered 401. nil: anyone may.
	Admin func(*http.Request) bool
	// Stored, if not nil, is /status's "stored": the MachineConfigs stored
	// before the webhook that the rollback release cannot parse
	// (admit/stored's report).
	Stored func() any
}

// Webhook is the admission webhook: New's handler.
type Webhook struct {
	cfg     Config
	metrics *metrics
	mux     http.Handler

	mu      sync.Mutex
	ceiling Ceiling
	known   bool // a ceiling was set: ready
	counts  map[string]int64
	// busy counts the reviews refused for want of a slot since the line
	// logged at busyLogged.
	busy       int64
	busyLogged time.Time

	lowered *lowerCache
	gate    *gate
}

// New returns the webhook's handler: POST MutatePath (AdmissionReview v1),
// GET /status, /metrics, /healthz and /readyz. It is ready once SetCeiling
// was called.
func New(cfg Config) *Webhook {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = defaultMaxBody
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.MaxReviews = cmp.Or(cfg.MaxReviews, defaultMaxReviews)
	cfg.QueueWait = cmp.Or(cfg.QueueWait, defaultQueueWait)
	cfg.Budget = cmp.Or(cfg.Budget, defaultBudget)
	w := &Webhook{cfg: cfg, metrics: newMetrics(cfg.Registry), counts: map[string]int64{}, lowered: newLowerCache(defaultCacheBytes),
		gate: newGate(cfg.MaxReviews, cfg.QueueWait)}
	r := chi.NewRouter()
	r.Use(recoverer(cfg.Logger))
	r.Post(MutatePath, w.mutate)
	r.Get("/healthz", func(rw http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(rw, "ok\n") })
	r.Get("/readyz", w.readyz)
	r.Group(func(r chi.Router) {
		r.Use(adminOnly(cfg.Admin))
		r.Get("/status", w.status)
		if cfg.Gatherer != nil {
			r.Handle("/metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
		}
	})
	w.mux = r
	return w
}

func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) { w.mux.ServeHTTP(rw, r) }

// SetCeiling sets the ceiling reviews warn (or refuse) above.
func (w *Webhook) SetCeiling(c Ceiling) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ceiling, w.known = c, true
	w.metrics.ceiling(c)
}

func (w *Webhook) current() Ceiling {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ceiling
}

func (w *Webhook) readyz(rw http.ResponseWriter, _ *http.Request) {
	w.mu.Lock()
	known := w.known
	w.mu.Unlock()
	if !known {
		http.Error(rw, "the ceiling is not known yet", http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(rw, "ok\n")
}

// mutate answers one AdmissionReview. A body it cannot read as one is a
// 4xx, which the API server treats as the webhook failing: with
// failurePolicy Ignore, the write goes on unchanged; so is a review that
// finds no slot (503) or cannot read its body within the budget.
func (w *Webhook) mutate(rw http.ResponseWriter, r *http.Request) {
	start := w.cfg.Now()
	outcome := outcomeBad
	defer func() {
		w.metrics.observe(outcome, w.cfg.Now().Sub(start))
		w.count(outcome)
	}()
	if r.ContentLength > w.cfg.MaxBody {
		tooLarge(rw)
		return
	}
	release, err := w.gate.enter(r.Context(), remoteAddr(r))
	if err != nil {
		outcome = outcomeBusy
		var busy *busyError
		if !errors.As(err, &busy) {
			return // its client went while it waited: no one to answer
		}
		w.logBusy(busy, remoteAddr(r))
		rw.Header().Set("Retry-After", "1")
		http.Error(rw, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), w.cfg.Budget)
	defer cancel()
	if d, ok := ctx.Deadline(); ok {
		// Not every ResponseWriter can (a test's recorder): the server's
		// own timeouts bound the read and write then. The answer must be
		// taken soon after the budget too: a client that reads nothing
		// (an HTTP/2 window of 0) would otherwise hold its slot until
		// the server's WriteTimeout.
		rc := http.NewResponseController(rw)
		_ = rc.SetReadDeadline(d)
		_ = rc.SetWriteDeadline(d.Add(responseGrace))
	}
	body, err := readCapped(r.Body, w.cfg.MaxBody, r.ContentLength)
	if errors.Is(err, errTooLarge) {
		tooLarge(rw)
		return
	}
	if err != nil {
		http.Error(rw, "reading the AdmissionReview: "+text.ForLog(err.Error()), http.StatusBadRequest)
		return
	}
	in, err := decodeReview(body)
	if err != nil {
		// Its words quote what was sent (an apiVersion of megabytes):
		// bounded, in the log and the answer.
		msg := text.ForLog(err.Error())
		w.cfg.Logger.Warn("bad admission review", "err", msg, "remote", r.RemoteAddr)
		http.Error(rw, msg, http.StatusBadRequest)
		return
	}
	c := w.current()
	resp, v := review(ctx, in.Request, c, w.cfg.Deny, w.lowered)
	outcome = v.outcome
	w.after(in.Request, v)
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: in.APIVersion, Kind: in.Kind}, Response: resp}
	rw.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(rw).Encode(&out); err != nil {
		w.cfg.Logger.Debug("writing the admission response", "err", err)
	}
}

// responseGrace is how long past its budget a review's answer may take to
// be written: the API server reads it at once.
const responseGrace = 2 * time.Second

// tooLarge answers a body over the cap 413 and closes the connection: the
// rest of the body is never read.
func tooLarge(rw http.ResponseWriter) {
	rw.Header().Set("Connection", "close")
	http.Error(rw, "AdmissionReview too large", http.StatusRequestEntityTooLarge)
}

// remoteAddr is the request's client address, the zero Addr when it has
// none (a test's request).
func remoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// after logs what a review found: at debug level, since the review's
// body is anyone's to send; the watch of what was stored logs what was
// written.
func (w *Webhook) after(req *request, v verdict) {
	if !v.above && (v.outcome == outcomeIgnored || v.outcome == outcomeUnchanged || v.outcome == outcomeLowered) {
		return
	}
	w.cfg.Logger.Debug("MachineConfig reviewed", "name", text.ForLog(v.name), "outcome", v.outcome, "above", v.above, "user", text.ForLog(req.UserInfo.Username))
}

// logBusy logs a review refused for want of a slot, at most one line a
// second, counting those refused since the last.
func (w *Webhook) logBusy(err error, addr netip.Addr) {
	now := w.cfg.Now()
	w.mu.Lock()
	w.busy++
	n := w.busy
	if !w.busyLogged.IsZero() && now.Sub(w.busyLogged) < time.Second {
		w.mu.Unlock()
		return
	}
	w.busyLogged, w.busy = now, 0
	w.mu.Unlock()
	w.cfg.Logger.Warn("reviews refused: no slot free", "refused", n, "err", err, "remote", addr.String())
}

func (w *Webhook) count(outcome string) {
	w.mu.Lock()
	w.counts[outcome]++
	w.mu.Unlock()
}

// statusDoc is /status.
type statusDoc struct {
	Ceiling      Ceiling          `json:"ceiling"`
	CeilingKnown bool             `json:"ceilingKnown"`
	AboveCeiling string           `json:"aboveCeiling"` // "warn" or "deny"
	Reviews      map[string]int64 `json:"reviews"`
	Stored       any              `json:"stored,omitempty"`
}

func (w *Webhook) status(rw http.ResponseWriter, _ *http.Request) {
	w.mu.Lock()
	doc := statusDoc{Ceiling: w.ceiling, CeilingKnown: w.known, AboveCeiling: "warn", Reviews: make(map[string]int64, len(w.counts))}
	for k, n := range w.counts {
		doc.Reviews[k] = n
	}
	w.mu.Unlock()
	if w.cfg.Deny {
		doc.AboveCeiling = "deny"
	}
	if w.cfg.Stored != nil {
		doc.Stored = w.cfg.Stored()
	}
	rw.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(rw)
	enc.SetIndent("", "  ")
	_ = enc.Encode(&doc)
}
