package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/source/kube"
)

var (
	admissionPolicies        = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	admissionPolicyBindings  = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	refuseInfraPolicyObjects = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: refuse-infra}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [machineconfiguration.openshift.io]
      apiVersions: ["*"]
      operations: [CREATE]
      resources: [machineconfigs]
  validations:
  - expression: "!object.metadata.name.startsWith('rendered-infra-')"
    message: refused by the test's admission policy
`
	refuseInfraBinding = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: refuse-infra}
spec:
  policyName: refuse-infra
  validationActions: [Deny]
`
)

// A write the API server refuses (an admission policy, then removed) is
// retried with backoff and lands within seconds of the refusal ending,
// while the other pools keep being written.
func TestRetryRefusedWrite(t *testing.T) {
	cp := needControlPlane(t)
	ctx := context.Background()
	cp.Apply(t, poolObject(t, "worker"), poolObject(t, "infra"), mcObject(t, "50-worker", "worker", "v0"))
	c := startController(t, cp, Config{})
	first := map[string]string{}
	kubetest.Eventually(t, 20*time.Second, "both pools rendered", func() error {
		for _, p := range []string{"worker", "infra"} {
			if first[p] = configuration(pool(t, cp, p)); first[p] == "" {
				return fmt.Errorf("%s not yet", p)
			}
		}
		return nil
	})
	cp.Apply(t, kubetest.Object(t, refuseInfraPolicyObjects), kubetest.Object(t, refuseInfraBinding))
	t.Cleanup(func() {
		_ = cp.Dynamic.Resource(admissionPolicyBindings).Delete(ctx, "refuse-infra", metav1.DeleteOptions{})
		_ = cp.Dynamic.Resource(admissionPolicies).Delete(ctx, "refuse-infra", metav1.DeleteOptions{})
	})
	kubetest.Eventually(t, 20*time.Second, "the policy in force", func() error {
		probe := mcObject(t, "rendered-infra-probe", "infra", "x")
		_, err := cp.Dynamic.Resource(kube.MachineConfigs).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return nil
		}
		return fmt.Errorf("not refused: %v", err)
	})

	cp.Apply(t, mcObject(t, "50-worker", "worker", "v1"))
	kubetest.Eventually(t, 20*time.Second, "worker written while infra is refused", func() error {
		if n := configuration(pool(t, cp, "worker")); n == first["worker"] {
			return fmt.Errorf("worker still %s", n)
		}
		return nil
	})
	kubetest.Eventually(t, 10*time.Second, "infra retried", func() error {
		if n := testutil.ToFloat64(c.m.retries); n < 3 {
			return fmt.Errorf("%v retries", n)
		}
		if st := c.book.copy().Pools["infra"]; st == nil || st.LastError == "" {
			return fmt.Errorf("no error in /status: %+v", st)
		}
		return nil
	})
	if n := configuration(pool(t, cp, "infra")); n != first["infra"] {
		t.Fatalf("infra written while refused: %s", n)
	}
	if err := cp.Dynamic.Resource(admissionPolicyBindings).Delete(ctx, "refuse-infra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lifted := time.Now()
	kubetest.Eventually(t, 15*time.Second, "infra written once the refusal ends", func() error {
		if n := configuration(pool(t, cp, "infra")); n == first["infra"] {
			return fmt.Errorf("infra still %s", n)
		}
		return nil
	})
	t.Logf("infra written %s after the policy binding was deleted", time.Since(lifted).Round(time.Millisecond))
	// The API server shows the pool pointed before the sync that pointed
	// it returns and clears the error in /status.
	kubetest.Eventually(t, 10*time.Second, "infra's error cleared", func() error {
		if st := c.book.copy().Pools["infra"]; st.LastError != "" {
			return fmt.Errorf("infra's error not cleared: %s", st.LastError)
		}
		return nil
	})
}
