package serve

import (
	"net/http"
	"strings"
	"testing"
)

// The node ports of mcs start serve what nodes and probes use and nothing
// that names pools, renders or other nodes; the admin handler serves that.
func TestNodeHandler(t *testing.T) {
	s := worker(t, Config{})
	for _, tc := range []struct {
		path        string
		node, admin int
	}{
		{"/config/worker", http.StatusOK, http.StatusNotFound},
		{"/healthz", http.StatusOK, http.StatusOK},
		{"/readyz", http.StatusOK, http.StatusOK},
		{"/status", http.StatusNotFound, http.StatusOK},
		{"/metrics", http.StatusNotFound, http.StatusOK},
		{"/v1/node-failure", http.StatusMethodNotAllowed, http.StatusMethodNotAllowed}, // POST only, on every port
	} {
		if w := get(t, s.NodeHandler(), "GET", tc.path); w.Code != tc.node {
			t.Errorf("node port: %s answered %d, want %d", tc.path, w.Code, tc.node)
		}
		if w := get(t, s.AdminHandler(), "GET", tc.path); w.Code != tc.admin {
			t.Errorf("admin port: %s answered %d, want %d", tc.path, w.Code, tc.admin)
		}
	}
	if idx := get(t, s.NodeHandler(), "GET", "/").Body.String(); strings.Contains(idx, "/status") || !strings.Contains(idx, "/config/") {
		t.Errorf("the node port's index lists what it does not serve, or not what it does:\n%s", idx)
	}
}
