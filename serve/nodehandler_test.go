package serve

import (
	"net/http"
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
	} {
		if w := get(t, s.NodeHandler(), "GET", tc.path); w.Code != tc.node {
			t.Errorf("node port: %s answered %d, want %d", tc.path, w.Code, tc.node)
		}
		if w := get(t, s.AdminHandler(), "GET", tc.path); w.Code != tc.admin {
			t.Errorf("admin port: %s answered %d, want %d", tc.path, w.Code, tc.admin)
		}
	}
}
