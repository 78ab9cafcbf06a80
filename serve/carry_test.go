package serve

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/serve/status"
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
	if c, r := metric(t, s, "mcs_render_pools_carried_total"), metric(t, s, "mcs_render_pools_rerendered_total"); c != 1 || r != 3 {
		t.Fatalf("metrics carried %v rerendered %v, want 1 and 3", c, r)
	}
	w := get(t, s, http.MethodGet, "/status")
	var st status.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.PoolsRerendered != 1 || st.PoolsCarried != 1 {
		t.Fatalf("status %v: %+v", err, st)
	}
}
