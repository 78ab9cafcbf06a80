package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
)

// POST /v1/node-failure is served on the nodes' handler without a token
// (the machine-config-daemon sends none) and on the admin handler; a
// report of a served pool is told once, shows in /status and on the
// status page; a bad one is refused naming its field.
func TestNodeFailureRoute(t *testing.T) {
	var mu sync.Mutex
	var told []source.Notice
	s := newTestServer(t, Config{Tokens: func() []Token { return nil }, Notify: func(n source.Notice) {
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
