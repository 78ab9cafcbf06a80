package admit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// A config that does not parse is warned about at each problem's JSON path
// in the MachineConfig, never at a line and column of the API server's
// one-line JSON, and every problem is said, not only the first the parser
// stopped at (at most maxListed, then how many more).
func TestInvalidWarnings(t *testing.T) {
	var got strings.Builder
	for _, c := range []struct{ name, config string }{
		{"two relative paths", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"etc/a"},{"path":"etc/b"}]}}`},
		{"a mode string, then a relative path", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a","mode":"420"},{"path":"etc/b"}]}}`},
		{"three wrong types", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a","mode":"420"},{"path":"/etc/b","overwrite":"yes"}]},"systemd":{"units":[{"name":"a.service","enabled":"true"}]}}`},
		{"unknown keys", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a","contnets":{}},{"path":"/etc/b","overwrit":true}]}}`},
		{"seven relative paths", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"a"},{"path":"b"},{"path":"c"},{"path":"d"},{"path":"e"},{"path":"f"},{"path":"g"}]}}`},
	} {
		w := New(Config{Registry: prometheus.NewRegistry()})
		_, resp := post(t, w, reviewBody(admissionv1.Create, "alice", mcObject("99-invalid", c.config), nil))
		if !resp.Allowed || resp.Patch != nil {
			t.Errorf("%s: allowed %v, patch %s: want stored as written", c.name, resp.Allowed, resp.Patch)
		}
		got.WriteString("# " + c.name + "\n" + c.config + "\n")
		for _, w := range resp.Warnings {
			if strings.Contains(w, "line 1") || strings.Contains(w, " col ") {
				t.Errorf("%s: a position in the API server's JSON: %s", c.name, w)
			}
			got.WriteString("Warning: " + w + "\n")
		}
	}
	testkit.Golden(t, filepath.Join("testdata", "invalid-warnings.txt"), got.String(), *updateGolden)
}
