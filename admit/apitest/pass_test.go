package apitest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
)

// TestPassedWithWarning: what the webhook does not rewrite (spec 2, a
// config with a key no spec knows, one the machine-config-operator
// refuses) is stored as sent, and the writer is told why.
func TestPassedWithWarning(t *testing.T) {
	s := setup(t)
	d, warned := client(t, s.cp, "")
	for _, c := range []struct {
		name, config, kind, says string
	}{
		{"spec2", `{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/etc/a","contents":{"source":"data:,a"}}]}}`, admit.PassSpec2, "it is spec 2.2.0"},
		{"unknown-key", `{"ignition":{"version":"3.5.0"},"storage":{"filez":[]}}`, admit.PassInvalid, "does not parse"},
		// Valid at 3.2.0; the operator, reading 3.5.0, refuses it.
		{"link-without-target", `{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/x"}]}}`, admit.PassRefused, "valid in spec 3.2.0 but not in 3.5.0: link target is required"},
		// More items than a review proves within its time.
		{"too-many-items", manyFiles(9000), admit.PassCostly, "too costly to prove"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := admit.Lower([]byte(c.config), convert.Version{})
			var pe *admit.PassError
			if !errors.As(err, &pe) || pe.Kind != c.kind {
				t.Fatalf("Lower: %v, want a %s PassError", err, c.kind)
			}
			got, err := createConfig(d, "pass-"+c.name, c.config)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = s.cp.Dynamic.Resource(machineConfigs).Delete(context.Background(), got.GetName(), metav1.DeleteOptions{})
			})
			if sent := jsonCanonical(t, []byte(c.config)); string(configOf(got)) != sent {
				t.Errorf("stored %s, want as sent %s", configOf(got), sent)
			}
			ws := warned.take()
			// An invalid config's warning names the JSON path first
			// (admit's passWarnings); the others, spec.config.
			if len(ws) != 1 || !strings.HasPrefix(ws[0], "MachineConfig pass-"+c.name+": ") || !strings.Contains(ws[0], "stored as written") || !strings.Contains(ws[0], c.says) {
				t.Errorf("warnings %q", ws)
			}
		})
	}
}

// manyFiles is a 3.5.0 config of n files.
func manyFiles(n int) string {
	var b strings.Builder
	b.WriteString(`{"ignition":{"version":"3.5.0"},"storage":{"files":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"/etc/f/%d"}`, i)
	}
	b.WriteString(`]}}`)
	return b.String()
}
