package serve

import (
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

// A directory mode with special bits from a config of a spec before 3.6 is
// served as written at every spec before 3.6 (they ignore the bits), as
// the render writes it, and without them at 3.6, which would apply them.
func TestServedWrittenModes(t *testing.T) {
	r := result(t, "worker", `{"ignition":{"version":"3.5.0"},"storage":{"directories":[{"path":"/var/scratch","mode":1023}]}}`)
	r.WrittenModes = convert.WrittenModes{"/var/scratch": 0o1777}
	s := newTestServer(t, Config{}, r)
	for _, tc := range []struct {
		version, mode string
	}{{"3.6.0", `"mode":511`}, {"3.5.0", `"mode":1023`}, {"3.0.0", `"mode":1023`}, {"2.2.0", `"mode":1023`}} {
		t.Run(tc.version, func(t *testing.T) {
			w := get(t, s, "GET", "/config/worker?version="+tc.version)
			if w.Code != 200 || !strings.Contains(w.Body.String(), tc.mode) {
				t.Errorf("%d %s, want %s", w.Code, w.Body.String()[:min(w.Body.Len(), 300)], tc.mode)
			}
		})
	}
}
