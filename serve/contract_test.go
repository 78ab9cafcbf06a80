package serve

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// contractCase provokes one cause: a server and the request that gets it.
type contractCase struct {
	server  func(t *testing.T, cfg Config) *Server
	request func(t *testing.T, s *Server) *httptest.ResponseRecorder
	body    string
}

func worker(t *testing.T, cfg Config) *Server {
	return newTestServer(t, cfg, result(t, "worker", plainIgn))
}

func getter(target string, headers ...string) func(*testing.T, *Server) *httptest.ResponseRecorder {
	return func(t *testing.T, s *Server) *httptest.ResponseRecorder { return get(t, s, "GET", target, headers...) }
}

// tokensCfg accepts "new-token" and "infra-token" (for pool infra only);
// "old-token" was accepted before.
func tokensCfg(cfg Config) Config {
	var mu sync.Mutex
	infra := Token{Secret: []byte("infra-token"), Pools: []string{"infra"}}
	tokens := []Token{{Secret: []byte("old-token")}, {Secret: []byte("new-token")}, infra}
	cfg.Tokens = func() []Token {
		mu.Lock()
		defer mu.Unlock()
		cur := tokens
		tokens = []Token{{Secret: []byte("new-token")}, infra} // rotated after the first request
		return cur
	}
	return cfg
}

var contractCases = map[status.Cause]contractCase{
	status.CauseNotReady: {server: func(t *testing.T, cfg Config) *Server { return mustNew(t, cfg) },
		request: getter("/config/worker"), body: "no render loaded yet"},
	status.CauseRenderFailed: {server: func(t *testing.T, cfg Config) *Server {
		s := mustNew(t, cfg)
		rl := &pipeline.Reloader{Source: &inputs{Loads: []load{{In: &source.Input{Failed: map[string]error{"worker": errors.New("dir/50-worker.yaml: bad")}}}}}, Server: s}
		rl.Reload(context.Background())
		return s
	}, request: getter("/config/worker"), body: "no render has succeeded yet; the newest attempt failed: pool worker (never rendered: nothing is served for it): dir/50-worker.yaml: bad"},
	status.CauseOverloaded: {server: func(t *testing.T, cfg Config) *Server { cfg.MaxInFlight = 1; return worker(t, cfg) },
		request: overloaded, body: "overloaded: 1 config requests in flight"},
	status.CauseUnknownPool: {server: worker, request: getter("/config/infra"), body: `unknown pool "infra": the pools are worker (create the pool`},
	status.CausePoolNotRendered: {server: func(t *testing.T, cfg Config) *Server {
		s := mustNew(t, cfg)
		in := &source.Input{Results: []*render.Result{result(t, "worker", plainIgn)},
			Failed: map[string]error{"infra": errors.New("dir/50-infra.yaml: MachineConfig/50-infra: $.spec.kernelType: bogus\nsecond problem")}}
		(&pipeline.Reloader{Source: &inputs{Loads: []load{{In: in}}}, Server: s}).Reload(context.Background())
		return s
	}, request: getter("/config/infra"), body: `pool "infra" has no good render yet: dir/50-infra.yaml: MachineConfig/50-infra: $.spec.kernelType: bogus; second problem`},
	status.CauseTokenMissing: {server: func(t *testing.T, cfg Config) *Server { return worker(t, tokensCfg(cfg)) },
		request: getter("/config/worker"), body: "needs Authorization: Bearer <token>"},
	status.CauseTokenRejected: {server: func(t *testing.T, cfg Config) *Server { return worker(t, tokensCfg(cfg)) },
		request: getter("/config/worker", "Authorization", "Bearer guess"), body: "the bearer token is not accepted"},
	status.CauseTokenOtherPool: {server: func(t *testing.T, cfg Config) *Server { return worker(t, tokensCfg(cfg)) },
		request: getter("/config/worker", "Authorization", "Bearer infra-token"), body: "the bearer token is not accepted for this pool"},
	status.CauseTokenRetired: {server: func(t *testing.T, cfg Config) *Server {
		s := worker(t, tokensCfg(cfg))
		if w := get(t, s, "GET", "/config/worker", "Authorization", "Bearer old-token"); w.Code != 200 {
			t.Fatalf("old token before rotation: %d", w.Code)
		}
		return s
	}, request: getter("/config/worker", "Authorization", "Bearer old-token"), body: "the bearer token is not accepted (add the node's token"},
	// No input is known to make the stub fail; the row is the handler's
	// answer should it ever.
	status.CauseStubFailed: {server: worker, request: func(t *testing.T, s *Server) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		requestLog(s.cfg.Logger, s.counters.request)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.refuser.refuse(w, r, status.CauseStubFailed, "worker", "cannot build the skew stub config: mcs-skew-0")
		})).ServeHTTP(w, httptest.NewRequest("GET", "/config/worker", nil))
		return w
	}, body: "cannot build the skew stub config"},
	status.CauseNoWrittenSpec: {server: worker, request: getter("/config/worker", "Accept", "application/vnd.coreos.ignition+json;version=4.0.0"),
		body: "Accept names no spec this server writes: it writes 2.2.0, 3.0.0"},
	status.CauseBadFormat:  {server: worker, request: getter("/config/worker?format=yaml"), body: "?format=yaml is not served: an Ignition config is JSON"},
	status.CauseBadQuery:   {server: worker, request: getter("/config/worker?spec=3.2.0"), body: "?spec is not a parameter of /config/, which takes ?version=X.Y.Z"},
	status.CauseBadVersion: {server: worker, request: getter("/config/worker?version=3.7.0"), body: "cannot write spec version"},
	status.CauseNotExpressible: {server: func(t *testing.T, cfg Config) *Server {
		return newTestServer(t, cfg, result(t, "worker", luksIgn))
	}, request: getter("/config/worker", "Accept", hdr32), body: "$.storage.luks.0.discard"},
}

// overloaded holds one request in flight (its body write blocks) and
// returns the answer to a second.
func overloaded(t *testing.T, s *Server) *httptest.ResponseRecorder {
	bw := &blockingWriter{ResponseRecorder: httptest.NewRecorder(), entered: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() { defer close(done); s.ServeHTTP(bw, httptest.NewRequest("GET", "/config/worker", nil)) }()
	<-bw.entered
	w := get(t, s, "GET", "/config/worker")
	close(bw.release)
	<-done
	return w
}

type blockingWriter struct {
	*httptest.ResponseRecorder
	once             sync.Once
	entered, release chan struct{}
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return b.ResponseRecorder.Write(p)
}

// TestContract holds every row of the contract: the code, a one-line body
// for curl users, the metric, and for a retried cause one WARN per client
// however often it retries, and an entry in /status.
func TestContract(t *testing.T) {
	for _, a := range contract {
		t.Run(string(a.Cause), func(t *testing.T) {
			c, ok := contractCases[a.Cause]
			if !ok {
				t.Fatal("no test case for this row of the contract")
			}
			var logs bytes.Buffer
			s := c.server(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			var w *httptest.ResponseRecorder
			for range 3 {
				w = c.request(t, s)
			}
			body := w.Body.String()
			if w.Code != a.Code || !strings.Contains(body, c.body) || strings.Count(body, "\n") != 1 {
				t.Fatalf("got %d %q, want %d, one line containing %q", w.Code, body, a.Code, c.body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if n := testutil.ToFloat64(s.m.refusals.WithLabelValues(string(a.Cause))); n < 1 {
				t.Errorf("mcs_config_refusals_total{cause=%q} = %v", a.Cause, n)
			}
			checkWaiting(t, s, a, logs.String())
		})
	}
}

func checkWaiting(t *testing.T, s *Server, a contractRow, logs string) {
	t.Helper()
	warns := strings.Count(logs, "level=WARN msg=\"node waiting")
	st := s.Status()
	if !a.Retried() {
		if warns != 0 || len(st.Waiting) != 0 {
			t.Errorf("a fatal answer is reported as a waiting node: %d WARN, %+v", warns, st.Waiting)
		}
		return
	}
	if warns != 1 || !strings.Contains(logs, "cause="+string(a.Cause)) {
		t.Errorf("want one WARN naming the cause for three retries, got %d:\n%s", warns, logs)
	}
	listed, want := st.Waiting, "True"
	if a.Cause.Unauthenticated() {
		// Anyone can send it: logged and counted, never listed.
		if len(st.Waiting) != 0 || len(st.UnknownPools) != 0 {
			t.Errorf("a request without an accepted token is listed: %+v %+v", st.Waiting, st.UnknownPools)
		}
		return
	}
	if a.Cause == status.CauseUnknownPool {
		// A name anyone can send: counted apart, no condition.
		listed, want = st.UnknownPools, "False"
		if len(st.Waiting) != 0 {
			t.Errorf("an unknown pool is listed as waiting: %+v", st.Waiting)
		}
	}
	if len(listed) != 1 || listed[0].Cause != a.Cause || listed[0].Requests < 1 || listed[0].Clients != 1 {
		t.Fatalf("/status waiting %+v, unknownPools %+v", st.Waiting, st.UnknownPools)
	}
	var cond *status.Condition
	for i := range st.Conditions {
		if st.Conditions[i].Type == "NodesWaiting" {
			cond = &st.Conditions[i]
		}
	}
	if cond == nil || cond.Status != want || want == "True" && !strings.Contains(cond.Message, string(a.Cause)) {
		t.Errorf("NodesWaiting condition %+v", cond)
	}
}

// Requests for pools the server does not know (300 curls of
// /config/scanN) are counted apart, bounded, logged once per client past
// the bound: no problem on the status page, no NodesWaiting, one refusal
// series per cause. Without tokens the answer lists the pools, as the
// open /status does; with tokens, no caller is told which pools exist
// (TestUnknownPoolWithTokens). The bounds and expiry are
// status.TestWaitingBounds'.
func TestUnknownPoolNoise(t *testing.T) {
	var logs bytes.Buffer
	s := worker(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for i := range 100 {
		for client := range 3 {
			req := httptest.NewRequest("GET", "/config/scan"+strconv.Itoa(i), nil)
			req.RemoteAddr = "10.0.0." + strconv.Itoa(client) + ":4000"
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if !strings.Contains(w.Body.String(), "the pools are worker") {
				t.Fatalf("the answer for an unknown pool does not list the pools: %s", w.Body.String())
			}
		}
	}
	st := s.Status()
	listed := len(st.UnknownPools) // the bound, plus (other)
	if len(st.Waiting) != 0 || listed < 2 || listed > 20 {
		t.Fatalf("waiting %+v, %d unknown pools; want none waiting, a few names plus (other)", st.Waiting, listed)
	}
	if n, want := strings.Count(logs.String(), "node waiting"), listed*3; n != want {
		t.Errorf("%d WARN lines, want one per pool and client up to the bound: %d", n, want)
	}
	var total int64
	for _, u := range st.UnknownPools {
		total += u.Requests
	}
	if total != 300 {
		t.Errorf("unknown pools count %d requests, want 300", total)
	}
	if c := condition(st, "NodesWaiting"); c.Status != "False" {
		t.Errorf("NodesWaiting %+v after unknown names only", c)
	}
	if ps := status.Problems(st, time.Now()); len(ps) != 0 {
		t.Errorf("the status page shows problems for unknown names: %+v", ps)
	}
	if page := get(t, s, "GET", "/status?format=html").Body.String(); !strings.Contains(page, "Requested pools that do not exist") || !strings.Contains(page, ">scan0<") || !strings.Contains(page, ">(other)<") {
		t.Error("the status page does not list the unknown pools asked for")
	}
	if n := testutil.CollectAndCount(s.m.refusals); n != len(contract) {
		t.Errorf("the refusal metric has %d series, want one per cause (%d), none per pool", n, len(contract))
	}
}

// A cause a render fixes leaves /status at once: nodes that waited for the
// first render, for a pool's first good render or for a pool to be
// created are no longer said to retry (NodesWaiting) for ten minutes
// after they boot; a cause that comes back is logged again.
func TestWaitingEndsWithFix(t *testing.T) {
	broken := errors.New("dir/50-worker.yaml: MachineConfig/50-worker: $.spec.config.storage.files.0.path: relative path")
	w, m, infra := result(t, "worker", plainIgn), result(t, "master", plainIgn), result(t, "infra", plainIgn)
	for _, c := range []struct {
		name   string
		before load
		paths  []string       // asked for before the fix
		causes []status.Cause // of waiting and unknownPools before the fix
	}{
		{"first render failed", load{Err: errors.New("source directory: stat /srv/mcs: no such file or directory")}, []string{"/config/worker"}, []status.Cause{status.CauseRenderFailed}},
		{"pool never rendered, pool not created", load{In: &source.Input{Results: []*render.Result{m}, Failed: map[string]error{"worker": broken}}},
			[]string{"/config/worker", "/config/infra"}, []status.Cause{status.CausePoolNotRendered, status.CauseUnknownPool}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			srv := mustNew(t, Config{Logger: log})
			rl := &pipeline.Reloader{Source: &inputs{Loads: []load{c.before, {In: &source.Input{Results: []*render.Result{w, m, infra}}}}}, Server: srv, Logger: log}
			rl.Reload(context.Background())
			for _, p := range c.paths {
				get(t, srv, "GET", p)
			}
			st := srv.Status()
			var causes []status.Cause
			for _, e := range append(st.Waiting, st.UnknownPools...) {
				causes = append(causes, e.Cause)
			}
			slices.Sort(causes)
			if want := slices.Sorted(slices.Values(c.causes)); !slices.Equal(causes, want) {
				t.Fatalf("before the fix: causes %v, want %v", causes, want)
			}
			rl.Reload(context.Background()) // the fix: every pool renders
			st = srv.Status()
			if len(st.Waiting) != 0 || len(st.UnknownPools) != 0 || condition(st, "NodesWaiting").Status != "False" {
				t.Errorf("after the fix: waiting %+v, unknownPools %+v, NodesWaiting %+v", st.Waiting, st.UnknownPools, condition(st, "NodesWaiting"))
			}
			for _, p := range c.paths {
				if code := get(t, srv, "GET", p).Code; code != 200 {
					t.Errorf("GET %s after the fix: %d", p, code)
				}
			}
		})
	}
	// A cause that comes back after its fix is logged again.
	var logs bytes.Buffer
	srv := mustNew(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	rl := &pipeline.Reloader{Source: &inputs{Loads: []load{{In: &source.Input{Results: []*render.Result{m}}}, {In: &source.Input{Results: []*render.Result{m, infra}}}, {In: &source.Input{Results: []*render.Result{m}}}}}, Server: srv}
	for range 3 {
		rl.Reload(context.Background())
		get(t, srv, "GET", "/config/infra")
	}
	if n := strings.Count(logs.String(), "msg=\"node waiting"); n != 2 {
		t.Errorf("%d node-waiting lines for infra, created in between; want 2:\n%s", n, logs.String())
	}
}

func condition(st status.Status, typ string) status.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return status.Condition{}
}

// Ignition v2.0.x sends the spec-2 Accept of Ignition v0.x but reads only
// spec 3.0: its User-Agent decides (headers from its source, v2.0.0).
func TestIgnitionV20(t *testing.T) {
	const acceptV20 = "application/vnd.coreos.ignition+json; version=2.2.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1"
	s := newTestServer(t, Config{Gate: skewgate.New(nil, nil)}, result(t, "worker", plainIgn), result(t, "luks", luks32))
	for _, c := range []struct{ ua, pool, want string }{
		{"Ignition/v2.0.0", "worker", "3.0.0"},
		{"Ignition/v2.0.1", "worker", "3.0.0"},
		{"Ignition/v0.35.0", "worker", "2.2.0"},
		{"Ignition/was not built properly", "worker", "2.2.0"},
		{"Ignition/v2.0.0", "luks", "3.0.0"}, // the skew stub, in a spec it reads
	} {
		t.Run(c.ua+" "+c.pool, func(t *testing.T) {
			w := get(t, s, "GET", "/config/"+c.pool, "Accept", acceptV20, "User-Agent", c.ua)
			if got := servedVersion(t, w); w.Code != 200 || got.String() != c.want {
				t.Fatalf("%d, spec %s, want %s", w.Code, got, c.want)
			}
			_, stub := file(t, w.Body.Bytes(), skewgate.IssuePath(c.pool))
			if stub != (c.pool == "luks") {
				t.Fatalf("stub %v for pool %s", stub, c.pool)
			}
		})
	}
}

// ?version= is what a node reading exactly that spec gets: through the skew
// gate, never around it.
func TestVersionOverrideGated(t *testing.T) {
	old, err := skewgate.ParsePolicy([]byte("mode: Manual\nmanual: {mode: OCPVersion, ocpVersion: 4.10.0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		policy *skewgate.Policy
		ign    string
		query  string
		spec   string
		stub   bool
	}{
		{"admitted, exact spec", nil, plainIgn, "3.2.0", "3.2.0", false},
		{"spec-2", nil, plainIgn, "2.2.0", "2.2.0", false},
		{"pool needs a newer spec", nil, luksIgn, "3.2.0", "3.2.0", true},
		{"boot image older than the release", old, plainIgn, "3.4.0", "3.4.0", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestServer(t, Config{Gate: skewgate.New(c.policy, nil)}, result(t, "worker", c.ign))
			w := get(t, s, "GET", "/config/worker?version="+c.query)
			if got := servedVersion(t, w); w.Code != 200 || got.String() != c.spec {
				t.Fatalf("%d, spec %s", w.Code, got)
			}
			if _, stub := file(t, w.Body.Bytes(), skewgate.IssuePath("worker")); stub != c.stub {
				t.Fatalf("stub %v, want %v", stub, c.stub)
			}
		})
	}
	if !strings.Contains(mustNew(t, Config{}).Status().VersionOverride, "through the skew gate") {
		t.Error("/status does not say what ?version= does")
	}
}

// docs/reliability.md shows the contract: a row per cause with its code and
// whether Ignition retries it.
func TestContractDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/reliability.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range contract {
		retry := "no, the boot stops"
		if a.Retried() {
			retry = "yes"
		}
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(string(a.Cause)) + "` \\| [^|]+ \\| " + strconv.Itoa(a.Code) + "[^|]* \\| " + regexp.QuoteMeta(retry) + " \\|")
		if !row.Match(doc) {
			t.Errorf("docs/reliability.md has no row `| `%s` | … | %d | %s |`", a.Cause, a.Code, retry)
		}
	}
}

// With tokens, /status needs one, and so does knowing which pools exist:
// an unknown pool's answer names none, even to a token holder of another.
func TestUnknownPoolWithTokens(t *testing.T) {
	s := worker(t, tokensCfg(Config{}))
	for _, path := range []string{"/config/infra", "/config/scan"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer new-token")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if strings.Contains(w.Body.String(), "worker") {
			t.Errorf("%s: the answer names the server's pools: %s", path, w.Body.String())
		}
	}
}

// What a person typing a URL by hand gets: an index at /, ?version=3.2 as
// Accept's version=3.2, and a bare ?pretty indented.
func TestHandTypedURLs(t *testing.T) {
	s := worker(t, Config{})
	if w := get(t, s, "GET", "/"); w.Code != 200 || !strings.Contains(w.Body.String(), "/config/<pool>") {
		t.Errorf("GET /: %d %s", w.Code, w.Body)
	}
	if w := get(t, s, "GET", "/nope"); !strings.Contains(w.Body.String(), "GET / lists") {
		t.Errorf("GET /nope: %s", w.Body)
	}
	w := get(t, s, "GET", "/config/worker?version=3.2")
	if w.Code != 200 || !strings.Contains(w.Header().Get("Content-Type"), "version=3.2.0") {
		t.Errorf("?version=3.2: %d %s %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if w := get(t, s, "GET", "/config/worker?pretty"); !strings.Contains(w.Body.String(), "\n  ") {
		t.Errorf("bare ?pretty not indented: %s", w.Body)
	}
	if w := get(t, s, "GET", "/config/wroker"); !strings.Contains(w.Body.String(), `unknown pool "wroker" (did you mean worker?): the pools are worker`) {
		t.Errorf("a mistyped pool: %s", w.Body)
	}
}
