package preflight

import (
	"slices"
	"testing"

	"github.com/ignition-mcs/mcs/source/kube"
)

// Each need reads as a line of the report, and Grants lists every verb of
// every need in rbac.yaml's terms.
func TestNeeds(t *testing.T) {
	n := need{[]string{"get", "list"}, kube.ConfigMaps, kube.MCONamespace, kube.KubeconfigDataName}
	if got, want := n.String(), "get,list configmaps/kubeconfig-data in openshift-machine-config-operator"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	g := Grants()
	verbs := 0
	for _, n := range needs {
		verbs += len(n.verbs)
	}
	if len(g) != verbs || !slices.Contains(g, "watch machineconfiguration.openshift.io machineconfigs  ") || !slices.Contains(g, "create  events default ") {
		t.Errorf("Grants() = %q", g)
	}
}

// A MachineConfig's config is its JSON, or {} (not present) without one.
func TestUnstructuredConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		obj     map[string]any
		want    string
		present bool
	}{
		"none":    {map[string]any{"spec": map[string]any{}}, "{}", false},
		"null":    {map[string]any{"spec": map[string]any{"config": nil}}, "{}", false},
		"present": {map[string]any{"spec": map[string]any{"config": map[string]any{"ignition": map[string]any{"version": "3.2.0"}}}}, `{"ignition":{"version":"3.2.0"}}`, true},
	} {
		b, present, err := unstructuredConfig(tc.obj)
		if err != nil || string(b) != tc.want || present != tc.present {
			t.Errorf("%s: %s %v %v", name, b, present, err)
		}
	}
}
