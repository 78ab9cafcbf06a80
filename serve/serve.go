// Package serve answers booting nodes' config requests from precomputed, atomically swapped snapshots, negotiating the spec per client.
package serve

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/text"
	"github.com/ignition-mcs/mcs/nodefail"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// Config configures a Server.
type Config struct {
	Logger *slog.Logger
	// Registry receives the server's metrics and backs /metrics.
	Registry *prometheus.Registry
	// DefaultSpec is served to clients whose Accept names no Ignition type
	// (curl); zero means the pool's rendered spec.
	DefaultSpec convert.Version
	// Tokens, when set, returns the bearer tokens /config/ accepts, each
	// with its pools; nil means no authentication, an empty list that
	// nothing is accepted. With
	// tokens, /status and /metrics need a token for every pool.
	Tokens func() []Token
	// Gate decides about clients that cannot read the pool's config or that
	// the boot-image skew policy refuses; nil answers those with 406.
	Gate *skewgate.Gate
	// Source names what is served, for /status.
	Source string
	// MaxSpec says, for /status, the spec ceiling renders are held to and
	// where it came from (a flag, or the cluster's rollback release).
	MaxSpec string
	// Notify, when set, is told about refused nodes, failed renders, first
	// fetches and nodes' first-boot failure reports (the Kubernetes source
	// turns them into Events). It is called on the request path and must
	// not block.
	Notify func(source.Notice)
	// ServingCert, when set, returns the certificate chain the TLS listener
	// serves, for /status's tls section.
	ServingCert func() (*tls.Certificate, error)
	// Backlog, when set, says what the source has seen change and not read
	// yet (source.Lagging), for /status's backlog and SourceBehind.
	Backlog func() source.Backlog
	// MaxInFlight bounds the config requests answered at once; past it
	// requests get 503 (retried). Zero means no bound.
	MaxInFlight int
}

// Server is the HTTP server: the routes for nodes, probes, metrics and
// status, serving the snapshot swapped in last. What /status reports
// beside the snapshot is its status recorder's.
type Server struct {
	cfg      Config
	router   *chi.Mux
	nodes    *chi.Mux // router without /status and /metrics
	snap     atomic.Pointer[pipeline.Snapshot]
	draining atomic.Bool // shutting down: not ready, still serving
	rec      *status.Recorder

	// The request path's caches and answers.
	m        *metrics
	accepts  negotiator
	clients  clients
	counters counters
	refuser  refuser
	failures *nodefail.Reports
}

// New returns a Server with every route registered, or the error
// registering its metrics on cfg.Registry. It serves 503 on /config/ and
// /readyz until the first snapshot is swapped in.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, m: m}
	s.failures, err = nodefail.New(nodefail.Config{Notify: cfg.Notify, Known: func(pool string) bool { return poolExists(s.snap.Load(), pool) }, Authorize: reportAuth(cfg.Tokens),
		Logger: cfg.Logger, Registry: cfg.Registry})
	if err != nil {
		return nil, err
	}
	waiting := &status.WaitingNodes{}
	s.rec, err = status.New(status.Config{Logger: cfg.Logger, Registry: cfg.Registry, Gate: cfg.Gate, Source: cfg.Source, MaxSpec: cfg.MaxSpec,
		Notify: cfg.Notify, Served: s.Snapshot, ServingCert: cfg.ServingCert, Backlog: cfg.Backlog, Failures: s.failures.Status, Waiting: waiting})
	if err != nil {
		return nil, err
	}
	s.clients.vec = m.clients
	s.counters.m = m
	s.refuser = refuser{log: cfg.Logger, counters: &s.counters, waiting: waiting}
	s.router, s.nodes = s.routes(true), s.routes(false)
	return s, nil
}

// index is what / answers: what this server serves, for whoever browses
// to it; the admin lines only where they are served.
func index(admin bool) string {
	adminLines := ""
	if admin {
		adminLines = `  /status          pools, renders, refused and waiting nodes (JSON; a page in a browser)
  /metrics         Prometheus metrics
`
	}
	return `mcs, a machine-config-server:
  /config/<pool>   a pool's Ignition config (Accept: application/vnd.coreos.ignition+json;version=X.Y.Z,
                   or ?version=X.Y.Z; ?pretty indents it)
` + adminLines + `  /healthz         the process answers
  /readyz          a render is served
  /v1/node-failure nodes report a failed first boot (POST)
`
}

// routes registers every route, in one place; without admin, only what
// nodes and probes use.
func (s *Server) routes(admin bool) *chi.Mux {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		plain(w, http.StatusNotFound, "not found: "+r.URL.Path+" (GET / lists what this server serves)")
	})
	idx := index(admin)
	r.Get("/", func(w http.ResponseWriter, r *http.Request) { plain(w, http.StatusOK, idx) })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "method not allowed: "+r.Method)
	})
	r.Group(func(r chi.Router) {
		r.Use(requestLog(s.cfg.Logger, s.counters.request), instrument(s.m.duration.WithLabelValues("config")),
			limit(s.cfg.MaxInFlight, &s.refuser), auth(s.cfg.Tokens, func(name string) string { return knownPool(s.snap.Load(), name) }, &s.refuser))
		r.Get("/config/{pool}", s.serveConfig)
		r.Head("/config/{pool}", s.serveConfig)
	})
	// Nodes report a failed first boot here (machine-config-operator PR
	// #6124): with a token that fetches the pool when tokens are on,
	// rate-limited per address and per pool by the handler, any method
	// answered (405 but for POST).
	r.With(instrument(s.m.duration.WithLabelValues("node-failure"))).Handle(nodeFailurePath, s.failures)
	r.Group(func(r chi.Router) {
		r.Use(instrument(s.m.duration.WithLabelValues("probe")))
		r.Get("/healthz", healthz)
		r.Head("/healthz", healthz)
		r.Get("/readyz", s.readyz)
		r.Head("/readyz", s.readyz)
	})
	if !admin {
		return r
	}
	r.Group(func(r chi.Router) {
		r.Use(instrument(s.m.duration.WithLabelValues("admin")), adminAuth(s.cfg.Tokens))
		r.Get("/status", statusHandler(s.rec, s.cfg.Logger))
		r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{Registry: s.cfg.Registry}))
	})
	return r
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { withState(s.router, w, r) }

// NodeHandler serves only what nodes and probes use (/config/, /healthz,
// /readyz, /v1/node-failure), as OpenShift's server: for the node ports of mcs start, whose
// /status and /metrics are on an admin listener of their own.
func (s *Server) NodeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { withState(s.nodes, w, r) })
}

// AdminHandler serves /status, /metrics and the probes without a token,
// for a listener of its own (loopback, or a port only Prometheus reaches)
// when the nodes' listeners require tokens.
func (s *Server) AdminHandler() http.Handler {
	r := chi.NewRouter()
	r.Use(instrument(s.m.duration.WithLabelValues("admin")))
	r.Get("/healthz", healthz)
	r.Get("/readyz", s.readyz)
	r.Get("/status", statusHandler(s.rec, s.cfg.Logger))
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{Registry: s.cfg.Registry}))
	r.With(instrument(s.m.duration.WithLabelValues("node-failure"))).Handle(nodeFailurePath, s.failures)
	return r
}

// nodeFailurePath is where nodes POST a failed first boot, on every port.
const nodeFailurePath = "/v1/node-failure"

// Swap makes snap the served generation and records it as the newest
// render, clearing the render error.
func (s *Server) Swap(snap *pipeline.Snapshot) {
	s.rec.AttachFetches(snap)
	s.snap.Store(snap)
	s.rec.Rendered(snap)
}

// Snapshot returns the generation being served, or nil before the first.
func (s *Server) Snapshot() *pipeline.Snapshot { return s.snap.Load() }

// CertificateReload records the outcome of the newest reload of the TLS
// serving certificate (see status.Recorder.CertificateReload).
func (s *Server) CertificateReload(err error) { s.rec.CertificateReload(err) }

// Health is where a pipeline.Reloader reports how renders went: the
// status recorder.
func (s *Server) Health() pipeline.Health { return s.rec }

// Status returns the current status document.
func (s *Server) Status() status.Status { return s.rec.Status() }

// knownPool is name when snap has it, else "-": an unauthenticated
// request must not put its own strings in logs or /status.
func knownPool(snap *pipeline.Snapshot, name string) string {
	if snap != nil && snap.Pool(name) != nil {
		return name
	}
	return "-"
}

// poolExists reports whether the pool named name exists: served, or its
// newest render failed (it may serve none yet), as /config/<pool> tells
// the two apart from an unknown pool.
func poolExists(snap *pipeline.Snapshot, name string) bool {
	if snap == nil {
		return false
	}
	_, failed := snap.Failed(name)
	return failed || snap.Pool(name) != nil
}

func (s *Server) serveConfig(w http.ResponseWriter, r *http.Request) {
	info := infoOf(r)
	snap := s.snap.Load()
	if snap == nil {
		if why := s.rec.FirstRenderFailed(); why != "" {
			s.refuser.refuse(w, r, status.CauseRenderFailed, "-", "no render has succeeded yet; the newest attempt failed: "+oneLine(why))
			return
		}
		s.refuser.refuse(w, r, status.CauseNotReady, "-", "no render loaded yet")
		return
	}
	name := chi.URLParam(r, "pool")
	p := snap.Pool(name)
	if p == nil {
		info.pool = "unknown"
		if why, ok := snap.Failed(name); ok {
			s.refuser.refuse(w, r, status.CausePoolNotRendered, name, fmt.Sprintf("pool %q has no good render yet: %s", text.Bounded(name), oneLine(why)))
			return
		}
		// Which pools exist is the admin's to read (/status), not every
		// caller's: named only where /status is open too (no tokens).
		msg := fmt.Sprintf("unknown pool %q", text.Bounded(name))
		if s.cfg.Tokens == nil {
			msg = render.UnknownPool(text.Bounded(name), snap.Names(), false)
		}
		s.refuser.refuse(w, r, status.CauseUnknownPool, name, msg)
		return
	}
	info.pool = p.Name()
	ua := r.Header.Get("User-Agent")
	client := s.clients.get(ua)
	client.requests.Inc()

	var q url.Values
	if r.URL.RawQuery != "" {
		q = r.URL.Query()
		if k := unknownParam(q); k != "" {
			s.refuser.refuse(w, r, status.CauseBadQuery, p.Name(), fmt.Sprintf("?%s is not a parameter of /config/, which takes ?version=X.Y.Z (the spec to write), ?format=json and ?pretty=1", text.Bounded(k)))
			return
		}
		if f := q.Get("format"); f != "" && !strings.EqualFold(f, "json") {
			s.refuser.refuse(w, r, status.CauseBadFormat, p.Name(), fmt.Sprintf("?format=%s is not served: an Ignition config is JSON, the one format (?format=json, or leave it out; ?pretty=1 indents it)", text.Bounded(f)))
			return
		}
	}
	resp, answered := s.choose(w, r, p, q.Get("version"), ua)
	if answered {
		return
	}
	info.spec = resp.VersionLabel
	if q.Has("pretty") && q.Get("pretty") != "0" { // bare ?pretty too
		writeBody(w, r, resp.ContentType, resp.Pretty())
		return
	}
	f := &resp.Form
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		f = resp.Gzipped()
	}
	if n := writeBody(w, r, resp.ContentType, f); n > 0 {
		s.counters.bytes(p.Name(), resp.VersionLabel).Add(float64(n))
		s.rec.RecordFetch(p, client.label, r.RemoteAddr, r.UserAgent())
	}
}

// choose picks the response for a request, or answers it itself (the skew
// stub, or a refusal) and reports that it did. ?version= asks for exactly
// that spec and goes through the skew gate like a node reading it would:
// it shows what such a node gets, and cannot bypass the policy.
func (s *Server) choose(w http.ResponseWriter, r *http.Request, p *pipeline.Pool, version, ua string) (*pipeline.Response, bool) {
	var wnt want
	var resp *pipeline.Response
	if version != "" {
		if strings.Count(version, ".") == 1 {
			version += ".0" // ?version=3.2, as Accept's version=3.2
		}
		v, err := convert.ParseOutputVersion(version)
		if err != nil {
			s.refuser.refuse(w, r, status.CauseBadVersion, p.Name(), err.Error())
			return nil, true
		}
		wnt, resp = wantExactly(v), p.Response(v)
	} else {
		wnt = forUserAgent(s.accepts.negotiate(r.Header.Get("Accept")), ua)
		resp = pick(p, wnt, s.cfg.DefaultSpec)
	}
	if s.cfg.Gate != nil && s.gate(w, r, p, wnt, resp, ua) {
		return nil, true
	}
	if resp != nil {
		return resp, false
	}
	if wnt.kind == wantNone {
		msg := "Accept names no spec this server writes: it writes " + convert.VersionList(convert.OutputVersions)
		if !wnt.refused.IsZero() {
			msg = fmt.Sprintf("Accept refuses spec %s (q=0 means not acceptable) and asks for nothing else this server writes: drop the q=0 to ask for it; it writes %s",
				wnt.refused, convert.VersionList(convert.OutputVersions))
		}
		s.refuser.refuse(w, r, status.CauseNoWrittenSpec, p.Name(), msg)
		return nil, true
	}
	v, err := whyNot(p, wnt)
	s.refuser.refuse(w, r, status.CauseNotExpressible, p.Name(), fmt.Sprintf("pool %s needs spec %s or newer; the client reads at most %s: %v", p.Name(), p.Lowest(), v, err))
	return nil, true
}

// wantExactly is what ?version=v asks for: a client whose newest spec is v.
func wantExactly(v convert.Version) want {
	if v.Major == 2 {
		return want{kind: wantSpec2, asked: v}
	}
	return want{kind: wantSpec3, max: v, asked: v}
}

// forUserAgent corrects a spec-2 Accept from an Ignition v2 binary, which
// reads only spec 3: Ignition v2.0.x sent version=2.2.0 in Accept.
func forUserAgent(w want, ua string) want {
	if w.kind != wantSpec2 {
		return w
	}
	v, ok := skewgate.ParseUserAgent(ua)
	if !ok || v.Major != 2 {
		return w
	}
	spec := skewgate.SpecFor(v)
	return want{kind: wantSpec3, max: spec, asked: spec}
}

// oneLine keeps a refusal body to one line: Ignition and curl users read
// the first.
func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }

// Header values shared by every response; net/http does not modify them.
var (
	varyHeader = []string{"Accept, Accept-Encoding"}
	noCache    = []string{"no-cache"}
)

// writeBody writes f with its validators, answering If-None-Match with 304
// and HEAD without a body. It returns the body bytes written.
func writeBody(w http.ResponseWriter, r *http.Request, contentType []string, f *pipeline.Form) int {
	h := w.Header()
	h["Content-Type"] = contentType
	h["Etag"] = f.ETag
	h["Vary"] = varyHeader
	h["Cache-Control"] = noCache
	if f.Encoding != nil {
		h["Content-Encoding"] = f.Encoding
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, f.ETag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return 0
	}
	h["Content-Length"] = f.Length
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return 0
	}
	if f.Body.Pieces() == 1 {
		return f.Body.Send(w)
	}
	// net/http's ReadFrom copies a body's first 512 bytes through its
	// buffers (to sniff a type this response names) before it hands the
	// rest to the connection; with the header written, it hands over all
	// of it, without the copy (pprof). A connection that holds the header
	// back sends it in the body's writev.
	hold := holderOf(r)
	if hold != nil {
		hold.HoldHeader()
	}
	http.NewResponseController(w).Flush()
	n := f.Body.Send(w)
	if hold != nil {
		hold.SendHeld()
	}
	return n
}

func etagMatch(header, etag string) bool {
	for _, c := range strings.Split(header, ",") {
		c = strings.TrimSpace(c)
		c = strings.TrimPrefix(c, "W/")
		if c == "*" || c == etag {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding names gzip with q > 0.
func acceptsGzip(h string) bool {
	if h == "" || h == "identity" {
		return false
	}
	for _, part := range strings.Split(h, ",") {
		fields := strings.Split(part, ";")
		if !strings.EqualFold(strings.TrimSpace(fields[0]), "gzip") {
			continue
		}
		for _, p := range fields[1:] {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if f := strings.TrimSpace(v); f == "0" || strings.Trim(f, "0.") == "" {
					return false
				}
			}
		}
		return true
	}
	return false
}

// plain writes a short plain-text error: Ignition prints the body of a
// failed fetch, so it must say what is wrong in one line.
func plain(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

func healthz(w http.ResponseWriter, r *http.Request) { plain(w, http.StatusOK, "ok") }

// Drain makes /readyz answer 503 from now on while everything else is
// served as before, so that load balancers stop sending nodes here before
// the listeners close.
func (s *Server) Drain() { s.draining.Store(true) }

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		plain(w, http.StatusServiceUnavailable, "not ready: shutting down")
		return
	}
	if s.snap.Load() == nil {
		if s.rec.FirstRenderFailed() != "" {
			plain(w, http.StatusServiceUnavailable, "not ready: no render has succeeded yet; the newest attempt failed (lastError in /status)")
			return
		}
		plain(w, http.StatusServiceUnavailable, "not ready: no render loaded yet")
		return
	}
	plain(w, http.StatusOK, "ok")
}

// unknownParam is the first query parameter, by name, that /config/ does
// not read, or "": a typo (?verison=3.2.0, ?spec=3.2.0) must not be
// answered with the default spec as if it had been heard.
func unknownParam(q url.Values) string {
	first := ""
	for k := range q {
		if k != "version" && k != "format" && k != "pretty" && (first == "" || k < first) {
			first = k
		}
	}
	return first
}
