package stored

import (
	"slices"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/mctest"
)

func TestPoolsOf(t *testing.T) {
	pools := poolsFrom(kubetest.DecodeObjects(t, []byte(mctest.RolePool("worker")+"---\n"+mctest.Pool("infra")+`---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata: {name: worker-gpu}
spec: {machineConfigSelector: {}}
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata: {name: broken}
spec: {machineConfigSelector: {matchExpressions: [{key: a, operator: Sideways}]}}
`)))
	for _, tc := range []struct{ name, obj, want string }{
		{"selected by two", `metadata: {name: 50-worker, labels: {machineconfiguration.openshift.io/role: worker}}`, "infra worker"},
		{"selected by one", `metadata: {name: 50-infra, labels: {machineconfiguration.openshift.io/role: infra}}`, "infra"},
		{"selected by none", `metadata: {name: 50-nobody, labels: {machineconfiguration.openshift.io/role: nobody}}`, noPool},
		{"no labels", `metadata: {name: 50-bare}`, noPool},
		{"rendered, owned", `metadata: {name: rendered-x-1, ownerReferences: [{apiVersion: machineconfiguration.openshift.io/v1, kind: MachineConfigPool, name: worker-gpu, uid: u, controller: true}]}`, "worker-gpu"},
		{"rendered, by name, the longest pool", `metadata: {name: rendered-worker-gpu-0123}`, "worker-gpu"},
		{"rendered, by name", `metadata: {name: rendered-worker-0123}`, "worker"},
		{"rendered of a pool gone", `metadata: {name: rendered-gone-0123}`, noPool},
		{"an owner that is not the controller", `metadata: {name: 50-owned, labels: {machineconfiguration.openshift.io/role: infra}, ownerReferences: [{apiVersion: v1, kind: MachineConfigPool, name: worker, uid: u}]}`, "infra"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc := kubetest.Object(t, "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n"+tc.obj)
			if got := strings.Join(poolsOf(mc, pools), " "); got != tc.want {
				t.Errorf("pools %q, want %q", got, tc.want)
			}
		})
	}
}

// The verdict on configs, through the webhook's conversion: stored above
// the ceiling is unreadable, fixable when the conversion brings it to the
// ceiling, and the fields named are those that force the spec.
func TestVerdict(t *testing.T) {
	const (
		plain  = `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}}]}}`
		kargs  = `{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`
		cex    = `{"ignition":{"version":"3.5.0"},"storage":{"luks":[{"name":"root","device":"/dev/sda","cex":{"enabled":true}}]}}`
		low    = `{"ignition":{"version":"3.2.0"}}`
		future = `{"ignition":{"version":"3.9.0"}}`
		spec2  = `{"ignition":{"version":"2.2.0"}}`
	)
	for _, tc := range []struct {
		name, config string
		ceiling      convert.Version
		bad, fixable bool
		lowest       string
		forces       string
	}{
		{"3.5.0 under a 3.4 ceiling", plain, convert.V3_4, true, true, "3.0.0", ""},
		{"3.5.0 under a 3.5 ceiling", plain, convert.V3_5, false, false, "", ""},
		{"kernel arguments force 3.3", kargs, convert.V3_4, true, true, "3.3.0", "kernel arguments need spec 3.3.0"},
		{"a 3.5 field above a 3.4 ceiling", cex, convert.V3_4, true, false, "3.5.0", "LUKS CEX needs spec 3.5.0"},
		{"already low", low, convert.V3_4, false, false, "", ""},
		{"no ceiling: above its lowest", plain, convert.Version{}, true, true, "3.0.0", ""},
		{"no ceiling: at its lowest", cex, convert.Version{}, false, false, "", ""},
		{"a spec no release reads", future, convert.V3_4, true, false, "", ""},
		{"spec 2", spec2, convert.V3_4, false, false, "", ""},
		{"empty", ``, convert.V3_4, false, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, bad := summarize([]byte(tc.config)).verdict(tc.ceiling)
			if bad != tc.bad {
				t.Fatalf("unreadable %v, want %v: %+v", bad, tc.bad, f)
			}
			if !bad {
				return
			}
			if f.Fixable != tc.fixable || f.Lowest != tc.lowest {
				t.Errorf("fixable %v at %q, want %v at %q: %+v", f.Fixable, f.Lowest, tc.fixable, tc.lowest, f)
			}
			if tc.forces == "" && len(f.Forces) > 0 || tc.forces != "" && !slices.ContainsFunc(f.Forces, func(s string) bool { return strings.Contains(s, tc.forces) }) {
				t.Errorf("forces %q, want %q", f.Forces, tc.forces)
			}
		})
	}
}

// TestSummaryProblem: the Problem lower-existing shows says which it is: a
// config that does not parse, or one that parses but that the operator
// refuses at its newer spec.
func TestSummaryProblem(t *testing.T) {
	for _, tc := range []struct{ name, config, want, not string }{
		{"does not parse", `{"ignition":{"version":"3.5.0"},"storge":{}}`, "stored as written: it does not parse: ", "refuses"},
		{"refused at the newer spec", `{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/x"}]}}`,
			"stored as written: OpenShift's machine-config-operator (of the newest release known) reads spec ", "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := summarize([]byte(tc.config)).Problem
			if !strings.HasPrefix(p, tc.want) || strings.Contains(p, tc.not) {
				t.Errorf("problem %q, want it to start %q, without %q", p, tc.want, tc.not)
			}
		})
	}
}
