package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/rendertest"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// inputs and load script a source's loads.
type (
	inputs = rendertest.Source
	load   = rendertest.Load
)

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
	src := &inputs{Loads: []load{
		{In: &source.Input{Results: []*render.Result{w}}},                                                                // no policy from the source: the file's stays
		{In: &source.Input{Results: []*render.Result{w}, SkewPolicy: cluster}},                                           // the cluster's replaces it
		{Err: errors.New("api down")},                                                                                    // a failed load changes nothing
		{In: &source.Input{Results: []*render.Result{w}, SkewPolicy: cluster, SkewPolicyError: errors.New("mode: bad")}}, // a refused newer one: shown, the last good stays
		{In: &source.Input{Results: []*render.Result{w}}},                                                                // nor does a load without one
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
		loads := []load{{Err: context.Canceled}}
		if served {
			loads = append([]load{{In: &source.Input{Results: []*render.Result{result(t, "worker", plainIgn)}}}}, loads...)
		}
		rl := &pipeline.Reloader{Source: &inputs{Loads: loads}, Server: srv, Logger: log}
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
