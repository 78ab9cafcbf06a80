package admit

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files")

// A person's write refused above the ceiling says what to do, in the words
// the ceiling's source allows: a fixed --max-spec is raised by an
// administrator, the ClusterVersion's rises when an update completes.
func TestDenyRemedy(t *testing.T) {
	const luks35 = `{"ignition":{"version":"3.5.0"},"storage":{"luks":[{"name":"data","device":"/dev/vdb","discard":true}]}}`
	var got strings.Builder
	for _, c := range []struct {
		name, config string
		ceiling      Ceiling
	}{
		{"kernel arguments, ClusterVersion", kargs35, Ceiling{Spec: convert.V3_2, Reader: "OpenShift 4.13.10 (the release a rollback returns to)", Source: "spec 3.2.0: ClusterVersion status.history"}},
		{"LUKS discard, --max-spec", luks35, Ceiling{Spec: convert.V3_2, Reader: "the release a rollback returns to (--max-spec 3.2.0)", Source: "--max-spec 3.2.0"}},
	} {
		w := New(Config{Deny: true, Registry: prometheus.NewRegistry()})
		w.SetCeiling(c.ceiling)
		_, resp := post(t, w, reviewBody(admissionv1.Create, "alice", mcObject("99-refused", c.config), nil))
		if resp.Allowed || resp.Result == nil {
			t.Fatalf("%s: allowed", c.name)
		}
		got.WriteString("# " + c.name + "\n" + resp.Result.Message + "\n")
	}
	testkit.Golden(t, filepath.Join("testdata", "deny-remedy.txt"), got.String(), *updateGolden)
}
