package preflight

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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

// An API server that cannot be reached is one blocker, said once, not one
// per check.
func TestUnreachableAPIServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rc := &rest.Config{Host: "https://" + addr, Timeout: 5 * time.Second}
	k, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = Run(context.Background(), Config{REST: rc, Kube: k, SyncWait: time.Second}, &out)
	if !errors.Is(err, ErrBlocked) || strings.Count(out.String(), "BLOCKER") != 1 || !strings.Contains(out.String(), "the API server  cannot be reached") {
		t.Errorf("%v\n%s", err, out.String())
	}
}
