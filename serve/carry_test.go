package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/source"
)

func TestBuildSnapshotFromCarriesUnchangedPools(t *testing.T) {
	cc := &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}
	nf := render.NodeFiles{Kubeconfig: []byte("kubeconfig")}
	worker, infra := result(t, "worker", plainIgn), result(t, "infra", kargsIgn)
	s := mustNew(t, Config{})
	first, err := pipeline.BuildSnapshotFrom(nil, 1, []*render.Result{worker, infra}, cc, nf)
	if err != nil {
		t.Fatal(err)
	}
	s.Swap(first)
	served := func(pool string) (string, string) {
		t.Helper()
		w := get(t, s, http.MethodGet, "/config/"+pool, "Accept", "application/vnd.coreos.ignition+json;version=3.4.0")
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", pool, w.Code, w.Body)
		}
		return w.Header().Get("ETag"), w.Body.String()
	}
	workerTag, workerBody := served("worker")
	infraTag, _ := served("infra")

	// infra re-rendered (a new Result), worker's Result is the one served.
	infra2 := result(t, "infra", plainIgn)
	second, err := pipeline.BuildSnapshotFrom(first, 2, []*render.Result{worker, infra2}, cc, nf)
	if err != nil {
		t.Fatal(err)
	}
	if second.Rerendered != 1 || second.Carried != 1 {
		t.Fatalf("rerendered %d carried %d, want 1 and 1", second.Rerendered, second.Carried)
	}
	if second.Pool("worker") != first.Pool("worker") || second.Pool("infra") == first.Pool("infra") {
		t.Fatal("carried the wrong pool")
	}
	s.Swap(second)
	if tag, body := served("worker"); tag != workerTag || body != workerBody {
		t.Fatal("a carried pool's bytes or ETag changed")
	}
	if tag, _ := served("infra"); tag == infraTag {
		t.Fatal("a re-rendered pool kept its old ETag")
	}
	if c, r := testutil.ToFloat64(s.rec.m.carried), testutil.ToFloat64(s.rec.m.encoded); c != 1 || r != 3 {
		t.Fatalf("metrics carried %v rerendered %v, want 1 and 3", c, r)
	}
	w := get(t, s, http.MethodGet, "/status")
	var st Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.PoolsRerendered != 1 || st.PoolsCarried != 1 {
		t.Fatalf("status %v: %+v", err, st)
	}
}

func TestBuildSnapshotFromNodeFilesChanged(t *testing.T) {
	worker := result(t, "worker", plainIgn)
	for _, tc := range []struct {
		name string
		cc   *render.ControllerConfig
		nf   render.NodeFiles
	}{
		{"kubeconfig", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}, render.NodeFiles{Kubeconfig: []byte("other")}},
		{"kubelet CA override", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}, render.NodeFiles{Kubeconfig: []byte("kc"), KubeletCA: []byte("ca2")}},
		{"served CA", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca2")}, render.NodeFiles{Kubeconfig: []byte("kc")}},
		{"cloud CA", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca"), CloudProviderCAData: []byte("cloud")}, render.NodeFiles{Kubeconfig: []byte("kc")}},
		{"no ControllerConfig", nil, render.NodeFiles{Kubeconfig: []byte("kc")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, err := pipeline.BuildSnapshot(1, []*render.Result{worker}, &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}, render.NodeFiles{Kubeconfig: []byte("kc")})
			if err != nil {
				t.Fatal(err)
			}
			next, err := pipeline.BuildSnapshotFrom(first, 2, []*render.Result{worker}, tc.cc, tc.nf)
			if err != nil {
				t.Fatal(err)
			}
			if next.Carried != 0 || next.Pool("worker") == first.Pool("worker") {
				t.Fatal("carried a pool whose node files changed")
			}
			if first.Pool("worker").Response(worker.Spec).ETag[0] == next.Pool("worker").Response(worker.Spec).ETag[0] {
				t.Fatal("same ETag for other node files")
			}
		})
	}
}

// The Reloader builds each snapshot from the one served: a source that
// hands back a pool's earlier Result gets that pool's responses carried.
func TestReloadCarriesUnchangedPools(t *testing.T) {
	worker, infra := result(t, "worker", plainIgn), result(t, "infra", kargsIgn)
	src := &inputs{loads: []load{
		{in: &source.Input{Results: []*render.Result{worker, infra}}},
		{in: &source.Input{Results: []*render.Result{worker, result(t, "infra", plainIgn)}}},
	}}
	srv := mustNew(t, Config{})
	rl := &pipeline.Reloader{Source: src, Server: srv}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := rl.Server.Snapshot()
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := rl.Server.Snapshot()
	if second.Pool("worker") != first.Pool("worker") || second.Pool("infra") == first.Pool("infra") {
		t.Fatal("the reload did not carry worker alone")
	}
	if st := srv.Status(); st.PoolsRerendered != 1 || st.PoolsCarried != 1 {
		t.Fatalf("status rerendered %d carried %d", st.PoolsRerendered, st.PoolsCarried)
	}
}
