package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source"
)

func TestBuildSnapshotFromCarriesUnchangedPools(t *testing.T) {
	cc := &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}
	nf := NodeFiles{Kubeconfig: []byte("kubeconfig")}
	worker, infra := result(t, "worker", plainIgn), result(t, "infra", kargsIgn)
	s := mustNew(t, Config{})
	first, err := BuildSnapshotFrom(nil, 1, []*render.Result{worker, infra}, cc, nf)
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
	second, err := BuildSnapshotFrom(first, 2, []*render.Result{worker, infra2}, cc, nf)
	if err != nil {
		t.Fatal(err)
	}
	if second.Rerendered != 1 || second.Carried != 1 {
		t.Fatalf("rerendered %d carried %d, want 1 and 1", second.Rerendered, second.Carried)
	}
	if second.pools["worker"] != first.pools["worker"] || second.pools["infra"] == first.pools["infra"] {
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
		nf   NodeFiles
	}{
		{"kubeconfig", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}, NodeFiles{Kubeconfig: []byte("other")}},
		{"kubelet CA override", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}, NodeFiles{Kubeconfig: []byte("kc"), KubeletCA: []byte("ca2")}},
		{"served CA", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca2")}, NodeFiles{Kubeconfig: []byte("kc")}},
		{"cloud CA", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca"), CloudProviderCAData: []byte("cloud")}, NodeFiles{Kubeconfig: []byte("kc")}},
		{"no ControllerConfig", nil, NodeFiles{Kubeconfig: []byte("kc")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, err := BuildSnapshot(1, []*render.Result{worker}, &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}, NodeFiles{Kubeconfig: []byte("kc")})
			if err != nil {
				t.Fatal(err)
			}
			next, err := BuildSnapshotFrom(first, 2, []*render.Result{worker}, tc.cc, tc.nf)
			if err != nil {
				t.Fatal(err)
			}
			if next.Carried != 0 || next.pools["worker"] == first.pools["worker"] {
				t.Fatal("carried a pool whose node files changed")
			}
			if first.pools["worker"].response(worker.Spec).etag[0] == next.pools["worker"].response(worker.Spec).etag[0] {
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
	rl := &Reloader{Source: src, Server: mustNew(t, Config{})}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := rl.Server.Snapshot()
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := rl.Server.Snapshot()
	if second.pools["worker"] != first.pools["worker"] || second.pools["infra"] == first.pools["infra"] {
		t.Fatal("the reload did not carry worker alone")
	}
	if st := rl.Server.Status(); st.PoolsRerendered != 1 || st.PoolsCarried != 1 {
		t.Fatalf("status rerendered %d carried %d", st.PoolsRerendered, st.PoolsCarried)
	}
}
