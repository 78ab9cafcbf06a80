package kube

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/skewgate"
)

func machineConfiguration(t *testing.T, name, version, enforcement string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	js := `{"apiVersion":"operator.openshift.io/v1","kind":"MachineConfiguration","metadata":{"name":"` + name + `","resourceVersion":"` + version + `"},"spec":{"logLevel":"Normal"`
	if enforcement != "" {
		js += `,"bootImageSkewEnforcement":` + enforcement
	}
	if err := u.UnmarshalJSON([]byte(js + `}}`)); err != nil {
		t.Fatal(err)
	}
	return u
}

// The cluster's MachineConfiguration is the policy, as a policy file holding
// it would be; a bad version keeps the last good one; other objects of the
// kind are not the MCO's and are ignored.
func TestSkewPolicyFromMachineConfiguration(t *testing.T) {
	s := cachedSource(t, clusterDir(t, "aws"), Config{SkewPolicy: true})
	s.mcfgs = newStore()
	synced := false
	s.policy.synced = func() bool { return synced }
	if in, err := s.Load(context.Background()); err != nil || in.SkewPolicy != nil {
		t.Fatalf("before the policy is listed: %+v, %v; want no policy, the gate's left alone", in.SkewPolicy, err)
	}
	synced = true
	var policyErr error
	load := func() *skewgate.Policy {
		t.Helper()
		in, err := s.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if in.SkewPolicy == nil {
			t.Fatal("no skew policy in the input")
		}
		policyErr = in.SkewPolicyError
		return in.SkewPolicy
	}
	set := func(u *unstructured.Unstructured) {
		t.Helper()
		if err := s.mcfgs.Update(u); err != nil {
			t.Fatal(err)
		}
	}

	none := load()
	if none.Mode != "" {
		t.Errorf("without a MachineConfiguration: mode %q, want none", none.Mode)
	}
	if again := load(); again != none {
		t.Error("an unchanged cluster gave a new policy")
	}

	set(machineConfiguration(t, "other", "1", `{"mode":"None"}`))
	if p := load(); p != none {
		t.Errorf("another object's policy %q taken", p.Mode)
	}
	set(machineConfiguration(t, clusterMachineConfiguration, "1", ""))
	if p := load(); p != none {
		t.Error("a MachineConfiguration without a policy gave a new one")
	}

	set(machineConfiguration(t, clusterMachineConfiguration, "2", `{"mode":"Manual","manual":{"mode":"OCPVersion","ocpVersion":"4.12.0"}}`))
	manual := load()
	if manual.Mode != "Manual" || manual.Manual == nil || manual.Manual.OCPVersion != "4.12.0" {
		t.Fatalf("policy %+v, want the cluster's Manual 4.12.0", manual)
	}

	set(machineConfiguration(t, clusterMachineConfiguration, "3", `{"mode":"Sometimes"}`))
	if p := load(); p != manual {
		t.Errorf("an invalid MachineConfiguration replaced the policy with %+v", p)
	}
	if n := testutil.ToFloat64(s.m.policyErrors); n != 1 {
		t.Errorf("mcs_kube_skew_policy_errors_total %v, want 1", n)
	}
	const wantErr = `kubernetes: MachineConfiguration/cluster (resourceVersion 3): $.spec.bootImageSkewEnforcement.mode: "Sometimes" is not Manual, None or Automatic`
	if policyErr == nil || !strings.Contains(policyErr.Error(), wantErr) {
		t.Errorf("policy error %v, want one with %q", policyErr, wantErr)
	}
	load()
	if n := testutil.ToFloat64(s.m.policyErrors); n != 1 {
		t.Errorf("the same bad version counted again: %v", n)
	}
	if policyErr == nil {
		t.Error("the error went away while the bad version stands")
	}

	set(machineConfiguration(t, clusterMachineConfiguration, "4", ""))
	if p := load(); p.Mode != "" {
		t.Errorf("a MachineConfiguration without a policy: mode %q, want none", p.Mode)
	}
	if policyErr != nil {
		t.Errorf("error %v after a valid version", policyErr)
	}
}

// Without Config.SkewPolicy (the policy comes from a file) the source
// leaves the gate alone.
func TestSkewPolicyOff(t *testing.T) {
	s := cachedSource(t, clusterDir(t, "aws"), Config{})
	in, err := s.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if in.SkewPolicy != nil {
		t.Errorf("skew policy %+v without Config.SkewPolicy", in.SkewPolicy)
	}
}

func TestSkewPolicyKey(t *testing.T) {
	a := machineConfiguration(t, clusterMachineConfiguration, "1", `{"mode":"None"}`)
	b := machineConfiguration(t, clusterMachineConfiguration, "2", `{"mode":"None"}`)
	b.Object["status"] = map[string]any{"observedGeneration": int64(2)}
	c := machineConfiguration(t, clusterMachineConfiguration, "3", `{"mode":"Automatic"}`)
	if skewPolicyKey(a) != skewPolicyKey(b) {
		t.Error("a status write changes the key")
	}
	if skewPolicyKey(a) == skewPolicyKey(c) {
		t.Error("a new mode leaves the key")
	}
	d := machineConfiguration(t, clusterMachineConfiguration, "4", `{"mode":"None"}`)
	d.Object["status"] = map[string]any{"bootImageSkewEnforcementStatus": map[string]any{"mode": "None"}}
	if skewPolicyKey(a) == skewPolicyKey(d) {
		t.Error("the MCO's status of the policy leaves the key")
	}
	if skewPolicyKey(machineConfiguration(t, "other", "1", `{"mode":"None"}`)) != skewPolicyKey(machineConfiguration(t, "other", "2", `{"mode":"Manual"}`)) {
		t.Error("another object's policy changes the key")
	}
}

// The policy is optional: failing to discover or read it is shown with the
// policy, and the pools are served regardless.
func TestSkewPolicyReadErrors(t *testing.T) {
	s := cachedSource(t, clusterDir(t, "aws"), Config{SkewPolicy: true})
	s.policy.setUnread(errors.New("discovering operator.openshift.io/v1: timeout"))
	in, err := s.Load(context.Background())
	if err != nil || len(in.Results) == 0 {
		t.Fatalf("pools not served: %v", err)
	}
	if in.SkewPolicy != nil || in.SkewPolicyError == nil || !strings.Contains(in.SkewPolicyError.Error(), "timeout") {
		t.Errorf("undiscovered policy: %+v, %v", in.SkewPolicy, in.SkewPolicyError)
	}

	s = cachedSource(t, clusterDir(t, "aws"), Config{SkewPolicy: true})
	s.mcfgs = newStore()
	s.policy.synced = func() bool { return true }
	if err := s.mcfgs.Add(machineConfiguration(t, clusterMachineConfiguration, "1", `{"mode":"None"}`)); err != nil {
		t.Fatal(err)
	}
	s.policyWatchFailed(apierrors.NewForbidden(MachineConfigurations.GroupResource(), "", errors.New("RBAC")))
	in, err = s.Load(context.Background())
	if err != nil || len(in.Results) == 0 {
		t.Fatalf("a refused policy held back the pools: %v", err)
	}
	if in.SkewPolicy == nil || in.SkewPolicy.Mode != "None" || in.SkewPolicyError == nil || !strings.Contains(in.SkewPolicyError.Error(), "forbidden") {
		t.Errorf("refused watch: %+v, %v; want the last policy read and the error", in.SkewPolicy, in.SkewPolicyError)
	}
	if n := testutil.ToFloat64(s.m.errors); n != 0 {
		t.Errorf("the policy's trouble counted as %v API errors", n)
	}
	req := httptest.NewRequest(http.MethodGet, "/apis/operator.openshift.io/v1/machineconfigurations?watch=true", nil)
	s.observePolicy(req, &http.Response{StatusCode: http.StatusOK}, nil)
	if in, _ = s.Load(context.Background()); in.SkewPolicyError != nil {
		t.Errorf("error %v after a successful read", in.SkewPolicyError)
	}
}

// The enforcement OpenShift computed rides with the policy the source
// reads, for /status.
func TestSkewPolicyClusterStatus(t *testing.T) {
	s := cachedSource(t, clusterDir(t, "aws"), Config{SkewPolicy: true})
	s.mcfgs = newStore()
	s.policy.synced = func() bool { return true }
	mc := machineConfiguration(t, clusterMachineConfiguration, "1", `{"mode":"None"}`)
	mc.Object["status"] = map[string]any{"bootImageSkewEnforcementStatus": map[string]any{"mode": "Automatic",
		"automatic": map[string]any{"ocpVersion": "4.19.0", "rhcosVersion": "9.6.20250701-0"}}}
	if err := s.mcfgs.Add(mc); err != nil {
		t.Fatal(err)
	}
	in, err := s.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := in.SkewPolicy; p == nil || p.Mode != "None" || p.ClusterStatus == nil || p.ClusterStatus.Mode != "Automatic" || p.ClusterStatus.OCPVersion != "4.19.0" {
		t.Errorf("policy %+v", p)
	}
}
