package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// POST /v1/node-failure is served on the nodes' handler without a token
// when tokens are off (the machine-config-daemon sends none) and on the
// admin handler; a
// report of a served pool is told once, shows in /status and on the
// status page; a bad one is refused naming its field.
func TestNodeFailureRoute(t *testing.T) {
	var mu sync.Mutex
	var told []source.Notice
	s := newTestServer(t, Config{Notify: func(n source.Notice) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, n)
	}}, result(t, "worker", plainIgn))
	const body = `{"pool":"worker","nodeID":"ip-10-0-1-2","stage":"firstboot-update","imageURL":"quay.io/x","errorMessage":"pull: Bearer sekrit"}`
	for name, h := range map[string]http.Handler{"nodes": s, "admin": s.AdminHandler()} {
		req := httptest.NewRequest("POST", "/v1/node-failure", strings.NewReader(body))
		req.RemoteAddr = "10.0.0." + map[string]string{"nodes": "1", "admin": "2"}[name] + ":5"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 202 {
			t.Errorf("%s: %d %s", name, w.Code, w.Body)
		}
		req = httptest.NewRequest("POST", "/v1/node-failure", strings.NewReader(`{"pool":"worker","nodeID":"n"}`))
		w = httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 400 || !strings.Contains(w.Body.String(), `"field":"stage"`) {
			t.Errorf("%s: a report without a stage: %d %s", name, w.Code, w.Body)
		}
	}
	mu.Lock()
	if len(told) != 2 || told[0].Kind != source.NoticeFirstbootFailed || strings.Contains(told[0].Message, "sekrit") {
		t.Errorf("told %+v", told)
	}
	mu.Unlock()
	var st status.Status
	if err := json.Unmarshal(get(t, s.AdminHandler(), "GET", "/status?format=json").Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if r := st.NodeFailures.Reports; len(r) != 1 || r[0].Count != 2 || r[0].Node != "ip-10-0-1-2" || !r[0].Told {
		t.Errorf("/status nodeFailures %+v", st.NodeFailures)
	}
	page := get(t, s.AdminHandler(), "GET", "/status?format=html").Body.String()
	if !strings.Contains(page, "First-boot failures") || !strings.Contains(page, "Node ip-10-0-1-2 of pool worker failed its first boot") || strings.Contains(page, "sekrit") {
		t.Errorf("the status page does not show the report:\n%s", page)
	}
}

// Reports are taken only for pools that exist, a pool whose render
// failed among them (under its own name, with its Event), and, with
// tokens on, only with a token that fetches the pool; on the admin
// handler too. Nothing refused is told, kept or counted by pool.
func TestNodeFailureAuthAndPools(t *testing.T) {
	var mu sync.Mutex
	var told []string
	cfg := tokensCfg(Config{Notify: func(n source.Notice) {
		mu.Lock()
		defer mu.Unlock()
		if n.Kind == source.NoticeFirstbootFailed {
			told = append(told, n.Pool)
		}
	}})
	s := mustNew(t, cfg)
	in := &source.Input{Results: []*render.Result{result(t, "worker", plainIgn)}, Failed: map[string]error{"infra": errors.New("dir/50-infra.yaml: bad")}}
	(&pipeline.Reloader{Source: &inputs{Loads: []load{{In: in}}}, Server: s}).Reload(context.Background())
	report := func(pool string) string {
		return `{"pool":"` + pool + `","nodeID":"n-` + pool + `","stage":"firstboot-update","errorMessage":"x"}`
	}
	for i, c := range []struct {
		name, pool, token string
		handler           http.Handler
		code              int
	}{
		{"no token", "worker", "", s, 401},
		{"wrong token", "worker", "guess", s, 401},
		{"rotated out", "worker", "old-token", s, 401},
		{"another pool's token", "worker", "infra-token", s, 401},
		{"no token, admin handler", "worker", "", s.AdminHandler(), 401},
		{"unknown pool", "guessed", "new-token", s, 404},
		{"served pool", "worker", "new-token", s, 202},
		{"failed render, its own token", "infra", "infra-token", s.AdminHandler(), 202},
	} {
		req := httptest.NewRequest("POST", "/v1/node-failure", strings.NewReader(report(c.pool)))
		req.RemoteAddr = fmt.Sprintf("10.0.1.%d:5", i)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		w := httptest.NewRecorder()
		c.handler.ServeHTTP(w, req)
		if w.Code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, w.Code, w.Body, c.code)
		}
	}
	mu.Lock()
	if !slices.Equal(told, []string{"worker", "infra"}) {
		t.Errorf("told pools %q, want worker then infra", told)
	}
	mu.Unlock()
	if n := metric(t, s, "mcs_node_failure_reports_total", "pool", "infra", "stage", "firstboot-update"); n != 1 {
		t.Errorf("reports of the failed pool counted %v under its name", n)
	}
	if n := metric(t, s, "mcs_node_failure_nodes", "pool", "infra", "stage", "firstboot-update"); n != 1 {
		t.Errorf("nodes of the failed pool %v", n)
	}
	for _, reason := range []string{"unauthorized", "unknown-pool"} {
		if n := metric(t, s, "mcs_node_failure_reports_refused_total", "reason", reason); n == 0 {
			t.Errorf("refused %s not counted", reason)
		}
	}
	if got := testutil.CollectAndCount(s.cfg.Registry, "mcs_node_failure_reports_total"); got != 2 {
		t.Errorf("%d series of mcs_node_failure_reports_total, want worker and infra", got)
	}
}

// The enforcement OpenShift computed is shown beside the gate's own
// policy and findings, in /status and on the page.
func TestClusterSkewStatus(t *testing.T) {
	p, err := skewgate.ParsePolicy([]byte(`{"kind":"MachineConfiguration","spec":{},
		"status":{"bootImageSkewEnforcementStatus":{"mode":"Automatic","automatic":{"ocpVersion":"4.19.0","rhcosVersion":"9.6.20250701-0"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, Config{Gate: skewgate.New(p, nil)}, result(t, "worker", plainIgn))
	var st status.Status
	if err := json.Unmarshal(get(t, s, "GET", "/status?format=json").Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if c := st.SkewPolicy.ClusterStatus; c == nil || c.Mode != "Automatic" || c.OCPVersion != "4.19.0" {
		t.Errorf("/status skewPolicy.clusterStatus %+v", c)
	}
	page := get(t, s, "GET", "/status?format=html").Body.String()
	if !strings.Contains(page, "OpenShift's enforcement (MachineConfiguration status)</dt><dd><b>Automatic</b>, boot image recorded: OpenShift 4.19.0, RHCOS 9.6.20250701-0") {
		t.Errorf("the status page does not show OpenShift's enforcement:\n%s", page)
	}
}
