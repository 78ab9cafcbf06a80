package apitest

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
)

const (
	controllerSA = "system:serviceaccount:openshift-machine-config-operator:machine-config-controller"
	operatorSA   = "system:serviceaccount:openshift-machine-config-operator:machine-config-operator"
	// kargs needs spec 3.3: above a 4.13 rollback's 3.2.
	kargs = `{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`
)

// TestAboveCeiling: a MachineConfig needing more than the ceiling is
// stored (lowered) with a warning by default; with deny a person's write is
// refused with the same words, OpenShift's own service accounts' never
// (warned; the Event comes from the watch of what was stored, see
// admit/stored).
func TestAboveCeiling(t *testing.T) {
	s := setup(t)
	ceiling := admit.Ceiling{Spec: convert.V3_2, Reader: "OpenShift 4.13.10 (the release a rollback returns to)", Source: "test"}
	const want = "MachineConfig %s: $.spec.config.kernelArguments.shouldExist: kernel arguments need Ignition spec 3.3.0; OpenShift 4.13.10 (the release a rollback returns to) reads only up to 3.2.0"
	for _, c := range []struct {
		name, user string
		deny       bool
		refused    bool
	}{
		{name: "warn", user: "alice"},
		{name: "deny-person", user: "alice", deny: true, refused: true},
		{name: "deny-controller", user: controllerSA, deny: true},
		{name: "deny-operator", user: operatorSA, deny: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := admit.New(admit.Config{Deny: c.deny, Logger: kubetest.Logger(t)})
			w.SetCeiling(ceiling)
			s.handler.Store(ptr(w))
			d, warned := client(t, s.cp, c.user)
			name := "above-" + c.name
			got, err := createConfig(d, name, kargs)
			ws := warned.take()
			if len(ws) != 1 || ws[0] != strings.ReplaceAll(want, "%s", name) {
				t.Errorf("warnings %q", ws)
			}
			if c.refused {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "MachineConfig "+name+" needs Ignition spec 3.3.0, above the ceiling 3.2.0: OpenShift 4.13.10 (the release a rollback returns to) could not read it") {
					t.Fatalf("refusal: %v", err)
				}
				if _, err := s.cp.Dynamic.Resource(machineConfigs).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("refused, yet stored (%v)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = s.cp.Dynamic.Resource(machineConfigs).Delete(context.Background(), name, metav1.DeleteOptions{})
			})
			if v := storedVersion(got); v != "3.3.0" {
				t.Errorf("stored at %s, want 3.3.0", v)
			}
		})
	}
}
