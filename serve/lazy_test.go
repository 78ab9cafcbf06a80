package serve

import (
	"net/http"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

// A request for a spec not encoded yet is answered, as a HEAD and a 304 are.
func TestLazySpecServed(t *testing.T) {
	s := newTestServer(t, Config{}, result(t, "worker", plainIgn))
	w := get(t, s, http.MethodGet, "/config/worker?version=2.2.0")
	if w.Code != http.StatusOK || servedVersion(t, w) != convert.V2_2 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	nm := get(t, s, http.MethodGet, "/config/worker?version=2.2.0", "If-None-Match", w.Header().Get("ETag"))
	if nm.Code != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", nm.Code)
	}
}
