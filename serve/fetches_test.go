package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/html"

	"github.com/ignition-mcs/mcs/internal/htmltest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/fetchlog"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// notices collects what a server notifies.
type notices struct {
	mu   sync.Mutex
	list []source.Notice
}

func (n *notices) add(x source.Notice) { n.mu.Lock(); n.list = append(n.list, x); n.mu.Unlock() }

func (n *notices) of(kind source.NoticeKind) []source.Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []source.Notice
	for _, x := range n.list {
		if x.Kind == kind {
			out = append(out, x)
		}
	}
	return out
}

func fetch(t testing.TB, s *Server, pool, ua, addr string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/config/"+pool, nil)
	req.Header.Set("User-Agent", ua)
	req.RemoteAddr = addr
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w
}

// swapResults swaps in a new generation of the given results.
func swapResults(t testing.TB, s *Server, gen uint64, results ...*render.Result) {
	t.Helper()
	snap, err := pipeline.BuildSnapshot(gen, results, nil, render.NodeFiles{})
	if err != nil {
		t.Fatal(err)
	}
	s.Swap(snap)
}

func renamed(r *render.Result, name string) *render.Result {
	c := *r
	c.Name = name
	return &c
}

// The first fetch of each rendered config by a real Ignition client is
// logged, counted, stamped and notified, once; curl's is not; a new
// rendered config starts again, and going back to an old one remembers it.
func TestFirstFetch(t *testing.T) {
	var logs bytes.Buffer
	var got notices
	reg := prometheus.NewRegistry()
	s := mustNew(t, Config{Registry: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Notify: got.add})
	worker := result(t, "worker", plainIgn)
	swapResults(t, s, 1, worker)
	stamp := func() float64 { return metric(t, s, "mcs_first_fetch_timestamp_seconds", "pool", "worker") }

	fetch(t, s, "worker", "curl/8.5.0", "10.0.0.1:1000")
	if n := len(got.of(source.NoticeFirstFetch)); n != 0 || stamp() != 0 {
		t.Fatalf("curl counted as a node: %d notices, stamp %v", n, stamp())
	}
	for i := range 3 {
		fetch(t, s, "worker", "Ignition/v2.27.0", fmt.Sprintf("10.0.0.%d:4000", i+2))
	}
	first := got.of(source.NoticeFirstFetch)
	if len(first) != 1 || first[0].Pool != "worker" || first[0].Rendered != worker.Name || !strings.Contains(first[0].Message, "node at 10.0.0.2 (Ignition v2.27.0)") {
		t.Fatalf("notices %+v", first)
	}
	if stamp() == 0 || metric(t, s, "mcs_first_fetches_total", "pool", "worker") != 1 {
		t.Errorf("stamp %v, count %v", stamp(), metric(t, s, "mcs_first_fetches_total", "pool", "worker"))
	}
	if n := strings.Count(logs.String(), "rendered config fetched for the first time"); n != 1 || !strings.Contains(logs.String(), "rendered="+worker.Name) {
		t.Errorf("%d first-fetch log lines:\n%s", n, logs.String())
	}
	old := stamp()

	swapResults(t, s, 2, renamed(worker, "rendered-worker-new"))
	if stamp() != 0 {
		t.Errorf("a new rendered config starts stamped %v", stamp())
	}
	fetch(t, s, "worker", "Ignition/v2.27.0", "10.0.0.9:4000")
	if n := len(got.of(source.NoticeFirstFetch)); n != 2 || stamp() == 0 {
		t.Errorf("after the new config's first fetch: %d notices, stamp %v", n, stamp())
	}
	swapResults(t, s, 3, worker)
	if stamp() != old {
		t.Errorf("back to the old config: stamp %v, want %v", stamp(), old)
	}
	fetches := s.Status().Pools[0].Fetches
	if len(fetches) != 2 || fetches[0].Rendered != worker.Name || !fetches[0].Serving || fetches[0].Count != 4 || fetches[1].Count != 1 {
		t.Errorf("fetches %+v", fetches)
	}
}

// What /status says was fetched: by pool, rendered config and Ignition
// version; a refused node's stub is no fetch of the config.
func TestStatusFetches(t *testing.T) {
	s := demoServer(t, nil)
	want := map[string]map[string]uint64{
		"worker": {"v2.27": 2, "v2.20": 1},
		"master": {"v2.27": 1},
		"infra":  {"other": 1},
	}
	for _, p := range s.Status().Pools {
		if len(p.Fetches) != 1 || p.Fetches[0].Rendered != p.Rendered || !p.Fetches[0].Serving {
			t.Fatalf("pool %s fetches %+v", p.Name, p.Fetches)
		}
		f := p.Fetches[0]
		got := map[string]uint64{}
		for _, c := range f.Clients {
			got[c.Ignition] = c.Count
			if c.First.After(c.Last) || c.First.Before(f.ServedSince) {
				t.Errorf("pool %s %s: first %s, last %s, served since %s", p.Name, c.Ignition, c.First, c.Last, f.ServedSince)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want[p.Name]) {
			t.Errorf("pool %s fetched by %v, want %v", p.Name, got, want[p.Name])
		}
		if hasIgnition := p.Name != "infra"; (f.FirstIgnitionFetch != nil) != hasIgnition {
			t.Errorf("pool %s first Ignition fetch %v", p.Name, f.FirstIgnitionFetch)
		}
	}
}

// The records are bounded: rendered configs kept per pool, Ignition
// versions per rendered config.
func TestFetchLogBounded(t *testing.T) {
	s := mustNew(t, Config{})
	worker := result(t, "worker", plainIgn)
	for i := range 3 * fetchlog.RenderedMax {
		swapResults(t, s, uint64(i+1), renamed(worker, fmt.Sprintf("rendered-worker-%02d", i)))
		for v := range 2 * fetchlog.ClientsMax {
			fetch(t, s, "worker", fmt.Sprintf("Ignition/v2.%d.0", v), "10.0.0.1:1")
		}
	}
	fetches := s.Status().Pools[0].Fetches
	if len(fetches) != fetchlog.RenderedMax {
		t.Fatalf("%d rendered configs kept", len(fetches))
	}
	if last := fmt.Sprintf("rendered-worker-%02d", 3*fetchlog.RenderedMax-1); fetches[0].Rendered != last || !fetches[0].Serving {
		t.Errorf("newest %s, want %s", fetches[0].Rendered, last)
	}
	for _, f := range fetches {
		if len(f.Clients) != fetchlog.ClientsMax || f.Clients[fetchlog.ClientsMax-1].Ignition != "other" || f.Count != 2*fetchlog.ClientsMax {
			t.Errorf("%s: %d clients, last %+v, %d fetches", f.Rendered, len(f.Clients), f.Clients[len(f.Clients)-1], f.Count)
		}
	}
	// A pool gone from the snapshot is forgotten.
	swapResults(t, s, 100, result(t, "master", plainIgn))
	swapResults(t, s, 101, result(t, "master", plainIgn), worker)
	if fetches := poolStatus(t, s.Status(), "worker").Fetches; len(fetches) != 1 || fetches[0].Count != 0 {
		t.Errorf("the removed pool's fetches are kept: %+v", fetches)
	}
}

// A pool's own failure is told about that pool, with since-when kept
// across attempts and cleared once it renders; a failure of the whole
// render is told about every served pool.
func TestRenderFailedNotices(t *testing.T) {
	var got notices
	s := mustNew(t, Config{Notify: got.add})
	broken, outage := errors.New("MachineConfig/99-worker-x: $.spec.kernelType: invalid"), errors.New("source unreachable")
	master, worker := result(t, "master", plainIgn), result(t, "worker", plainIgn)
	workerFails := load{In: &source.Input{Results: []*render.Result{master}, Failed: map[string]error{"worker": broken}}}
	rl := &pipeline.Reloader{Server: s, Source: &inputs{Loads: []load{
		{In: &source.Input{Results: []*render.Result{master, worker}}}, workerFails, workerFails, {Err: outage},
		{In: &source.Input{Results: []*render.Result{master, worker}}}, workerFails,
	}}}
	rl.Reload(context.Background())
	rl.Reload(context.Background())
	n := got.of(source.NoticeRenderFailed)
	if len(n) != 1 || n[0].Pool != "worker" || !errors.Is(n[0].Err, broken) || !n[0].Warning() {
		t.Fatalf("notices %+v", n)
	}
	since := *poolStatus(t, s.Status(), "worker").ErrorSince
	rl.Reload(context.Background())
	if st := s.Status(); !poolStatus(t, st, "worker").ErrorSince.Equal(since) || !st.LastError.Since.Equal(since) || fmt.Sprint(st.LastError.Pools) != "[worker]" {
		t.Errorf("second attempt: pool since %v, render since %v (want %v), pools %v", poolStatus(t, st, "worker").ErrorSince, st.LastError.Since, since, st.LastError.Pools)
	}

	rl.Reload(context.Background())
	n = got.of(source.NoticeRenderFailed)[2:]
	if len(n) != 2 || n[0].Pool != "master" || n[1].Pool != "worker" || n[0].Err != outage {
		t.Errorf("whole failure notices %+v", n)
	}
	if st := s.Status(); st.LastError.Pools != nil {
		t.Errorf("whole failure names pools %v", st.LastError.Pools)
	}

	rl.Reload(context.Background())
	if st := s.Status(); poolStatus(t, st, "worker").ErrorSince != nil || st.LastError != nil {
		t.Errorf("after recovery: %+v, last error %+v", poolStatus(t, st, "worker"), st.LastError)
	}
	// Recovered, a new failure begins anew.
	rl.Reload(context.Background())
	if st := s.Status(); !poolStatus(t, st, "worker").ErrorSince.After(since) || !st.LastError.Since.After(since) {
		t.Errorf("a failure after recovery kept the old since: pool %v, render %v", poolStatus(t, st, "worker").ErrorSince, st.LastError.Since)
	}
}

// A refused node is told with its address but not its port, so a boot
// loop repeats one message.
func TestRefusedNotice(t *testing.T) {
	var got notices
	s := mustNew(t, Config{Notify: got.add, Gate: skewgate.New(nil, nil)})
	swapResults(t, s, 1, result(t, "worker", luksIgn))
	for port := range 3 {
		req := httptest.NewRequest(http.MethodGet, "/config/worker", nil)
		req.Header.Set("User-Agent", "Ignition/v2.6.0")
		req.Header.Set("Accept", ign+"3.1.0")
		req.RemoteAddr = fmt.Sprintf("10.0.32.17:%d", 40000+port)
		s.ServeHTTP(httptest.NewRecorder(), req)
	}
	n := got.of(source.NoticeNodeRefused)
	if len(n) != 3 || n[0].Message != n[2].Message || n[0].Pool != "worker" {
		t.Fatalf("notices %+v", n)
	}
	id := s.cfg.Gate.Recent()[0].ID
	for _, want := range []string{"node at 10.0.32.17 (Ignition v2.6.0)", skewgate.ReasonSpecUnreadable, id, `cannot join pool "worker"`} {
		if !strings.Contains(n[0].Message, want) {
			t.Errorf("message %q lacks %q", n[0].Message, want)
		}
	}
	if len(got.of(source.NoticeFirstFetch)) != 0 {
		t.Error("a stub counted as a fetch")
	}
}

// An admin's curl asking for a spec a node would be refused at gets the
// same stub, but is no refused node: not in /status's refused list, not
// told to the cluster (no NodeRefused Event), and the page's "Fetched by
// nodes" counts no curl.
func TestAdminCurlIsNoNode(t *testing.T) {
	var got notices
	s := mustNew(t, Config{Notify: got.add, Gate: skewgate.New(nil, nil)})
	swapResults(t, s, 1, result(t, "worker", luksIgn))
	for _, ua := range []string{"curl/8.5.0", ""} {
		req := httptest.NewRequest(http.MethodGet, "/config/worker", nil)
		req.Header.Set("User-Agent", ua)
		req.Header.Set("Accept", ign+"3.1.0")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Header().Get("X-Mcs-Skew") == "" {
			t.Fatalf("%q: not the stub a node would get: %d %s", ua, w.Code, w.Body)
		}
	}
	if n := got.of(source.NoticeNodeRefused); len(n) != 0 || len(s.cfg.Gate.Recent()) != 0 {
		t.Errorf("an admin's curl told as a refused node: %+v, recent %+v", n, s.cfg.Gate.Recent())
	}

	demo := demoServer(t, nil)
	w := get(t, demo, http.MethodGet, "/status", "Accept", "text/html")
	doc, err := html.Parse(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	if row := htmltest.Text(htmltest.ByID(t, doc, "row-infra")); !strings.Contains(row, "no node yet (1 by other clients") {
		t.Errorf("infra, fetched by curl alone, shows %q", row)
	}
	if row := htmltest.Text(htmltest.ByID(t, doc, "row-worker")); !strings.Contains(row, "3 fetches; first") {
		t.Errorf("worker shows %q", row)
	}
}
