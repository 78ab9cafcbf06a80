package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// inputs is a Source that returns its loads in turn.
type inputs struct {
	loads []load
	n     int
}

type load struct {
	in  *source.Input
	err error
}

func (s *inputs) Load(context.Context) (*source.Input, error) {
	l := s.loads[s.n]
	s.n++
	return l.in, l.err
}
func (s *inputs) Watch(ctx context.Context, _ chan<- struct{}) { <-ctx.Done() }
func (s *inputs) String() string                               { return "test inputs" }

func TestReloadSkewPolicy(t *testing.T) {
	file, err := skewgate.ParsePolicy([]byte("mode: None"))
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := skewgate.ParsePolicy([]byte("kind: MachineConfiguration\nspec:\n  bootImageSkewEnforcement:\n    mode: Manual\n    manual: {mode: OCPVersion, ocpVersion: 4.12.0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	gate := skewgate.New(file, nil)
	w := result(t, "worker", plainIgn)
	src := &inputs{loads: []load{
		{in: &source.Input{Results: []*render.Result{w}}},                                                                // no policy from the source: the file's stays
		{in: &source.Input{Results: []*render.Result{w}, SkewPolicy: cluster}},                                           // the cluster's replaces it
		{err: errors.New("api down")},                                                                                    // a failed load changes nothing
		{in: &source.Input{Results: []*render.Result{w}, SkewPolicy: cluster, SkewPolicyError: errors.New("mode: bad")}}, // a refused newer one: shown, the last good stays
		{in: &source.Input{Results: []*render.Result{w}}},                                                                // nor does a load without one
	}}
	srv := mustNew(t, Config{Gate: gate})
	rl := &pipeline.Reloader{Source: src, Server: srv, Gate: gate}
	want := []struct {
		policy    *skewgate.Policy
		err       string
		policyErr string
	}{{file, "", ""}, {cluster, "", ""}, {cluster, "api down", ""}, {cluster, "", "mode: bad"}, {cluster, "", ""}}
	for i, w := range want {
		err := rl.Reload(context.Background())
		if (err == nil) != (w.err == "") || err != nil && !strings.Contains(err.Error(), w.err) {
			t.Fatalf("load %d: error %v, want %q", i, err, w.err)
		}
		if got := gate.Policy(); got != w.policy {
			t.Errorf("load %d: policy in force %+v, want %+v", i, got, w.policy)
		}
		if got := srv.Status().SkewPolicyError; got != w.policyErr {
			t.Errorf("load %d: /status skewPolicyError %q, want %q", i, got, w.policyErr)
		}
	}
}

// A load that finds no pools at all keeps every pool's last good render and
// says so; one that drops a single pool drops it.
func TestReloadEmptySourceKeepsServing(t *testing.T) {
	w, m := result(t, "worker", plainIgn), result(t, "master", plainIgn)
	src := &inputs{loads: []load{
		{in: &source.Input{Results: []*render.Result{w, m}}},
		{in: &source.Input{}},
		{in: &source.Input{Results: []*render.Result{w}}},
	}}
	srv := mustNew(t, Config{})
	rl := &pipeline.Reloader{Source: src, Server: srv}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := rl.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "the source has no pools any more") {
		t.Fatalf("empty load: %v, want the source's pools gone", err)
	}
	if got := rl.Server.Snapshot().Names(); len(got) != 2 {
		t.Fatalf("after an empty load, serving %v, want master and worker", got)
	}
	if st := srv.Status(); st.LastError == nil || !strings.Contains(st.LastError.Message, "no pools") {
		t.Errorf("/status lastError %+v, want the empty source named", st.LastError)
	}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rl.Server.Snapshot().Names(); len(got) != 1 || got[0] != "worker" {
		t.Fatalf("after dropping master, serving %v, want worker", got)
	}
}

// A pool whose newest render fails keeps its last good render, re-encoded
// with the node files of the day: a rotated kubeconfig reaches it too.
func TestReloadFailedPoolGetsNewNodeFiles(t *testing.T) {
	w, m := result(t, "worker", plainIgn), result(t, "master", plainIgn)
	src := &inputs{loads: []load{
		{in: &source.Input{Results: []*render.Result{w, m}}},
		{in: &source.Input{Results: []*render.Result{m}, Failed: map[string]error{"worker": errors.New("broken")}}},
	}}
	kubeconfig := []byte("apiVersion: v1\nkind: Config\n# old\n")
	srv := mustNew(t, Config{})
	rl := &pipeline.Reloader{Source: src, Server: srv, NodeFiles: func() (render.NodeFiles, error) { return render.NodeFiles{Kubeconfig: kubeconfig}, nil }}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	old := rl.Server.Snapshot().Pool("worker")
	kubeconfig = []byte("apiVersion: v1\nkind: Config\n# rotated\n")
	if err := rl.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("second load: %v, want worker's failure", err)
	}
	p := rl.Server.Snapshot().Pool("worker")
	if p == nil || p.Result() != w {
		t.Fatal("worker does not serve its last good render")
	}
	if kc, _ := file(t, p.Response(w.Spec).Body.Bytes(), "/etc/kubernetes/kubeconfig"); p == old || kc != string(kubeconfig) {
		t.Error("worker kept the node files of before the rotation")
	}
}

// A load cut short by shutdown is not a failed render: no ERROR "render
// failed" line, no lastError, no notice, as mcs stopping with a slow
// source (the API server) would otherwise say of a healthy cluster.
func TestReloadStoppedIsNotFailed(t *testing.T) {
	var transcript strings.Builder
	for _, served := range []bool{false, true} {
		var logs strings.Builder
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: noTime}))
		var told []source.Notice
		srv := mustNew(t, Config{Logger: log, Notify: func(n source.Notice) { told = append(told, n) }})
		ctx, cancel := context.WithCancel(context.Background())
		loads := []load{{err: context.Canceled}}
		if served {
			loads = append([]load{{in: &source.Input{Results: []*render.Result{result(t, "worker", plainIgn)}}}}, loads...)
		}
		rl := &pipeline.Reloader{Source: &inputs{loads: loads}, Server: srv, Logger: log}
		if served {
			rl.Reload(ctx)
		}
		cancel()
		if err := rl.Reload(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Reload after shutdown: %v, want context.Canceled", err)
		}
		if st := srv.Status(); st.LastError != nil || strings.Contains(logs.String(), "render failed") || len(told) != 0 {
			t.Errorf("served %v: a stopped load reported as failed: lastError %+v, notices %+v, logs:\n%s", served, st.LastError, told, logs.String())
		}
		if !strings.Contains(logs.String(), `level=INFO msg="render stopped: shutting down"`) {
			t.Errorf("no line saying the render stopped:\n%s", logs.String())
		}
		// The served render's line carries a duration: the golden keeps the rest.
		fmt.Fprintf(&transcript, "served before shutdown: %v\n", served)
		for _, line := range strings.SplitAfter(logs.String(), "\n") {
			if !strings.HasPrefix(line, `level=INFO msg="render served"`) {
				transcript.WriteString(line)
			}
		}
	}
	testkit.Golden(t, "testdata/render-stopped.txt", transcript.String(), *update)
}
