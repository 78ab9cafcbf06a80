package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/source/kube"
)

// mcs controller --dry-run as from a workstation: a cluster admin's
// kubeconfig, no namespace mcs, no --lease-namespace, against a real
// kube-apiserver through a proxy recording every request. It says at start
// that it elects no leader, reports the pool's rendered config, and sends
// nothing but reads and writes with dryRun=All: no Lease, no rendered
// config stored, the pool untouched.
func TestControllerDryRunWritesNothing(t *testing.T) {
	cp := kubetest.New(t, false)
	cp.Apply(t, kubetest.Object(t, mctest.RolePool("worker")), kubetest.Object(t, workerMC("one")))
	pool := func() *unstructured.Unstructured {
		p, err := cp.Dynamic.Resource(kube.MachineConfigPools).Get(context.Background(), "worker", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := pool()
	var rec kubetest.Recorder
	kc := writeKubeconfig(t, rec.Proxy(t, cp.Admin))
	ctl := startSubcommand(t, true, "controller", "--dry-run", "--kubeconfig", kc, "--listen", "127.0.0.1:0")
	var rendered string
	waitFor(t, "the pool reported", func() bool {
		_, body, _ := ctl.get("/status")
		var doc struct {
			Pools map[string]struct {
				Rendered string
				Writes   []string
			}
		}
		_ = json.Unmarshal(body, &doc)
		p := doc.Pools["worker"]
		rendered = p.Rendered
		return rendered != "" && strings.Contains(strings.Join(p.Writes, "\n"), "would have pointed pool at "+rendered)
	})
	if err := ctl.stop(); err != nil {
		t.Fatalf("mcs controller --dry-run: %v\n%s", err, ctl.stderr.String())
	}
	if out := ctl.stdout.String(); !strings.Contains(out, "no leader election (no Lease)") {
		t.Errorf("the dry run does not say it elects no leader:\n%s", out)
	}
	writes := rec.Writes()
	if len(writes) == 0 {
		t.Error("no write sent with dryRun=All: the dry run authorised nothing")
	}
	for _, w := range writes {
		if !strings.Contains(w, "dryRun=All") || strings.Contains(w, "leases") {
			t.Errorf("a write that is not a dry run: %s", w)
		}
	}
	for _, c := range rec.Calls() {
		if c.Resource == "leases" {
			t.Errorf("the dry run touched a Lease: %s", c)
		}
	}
	ctx := context.Background()
	l, err := cp.Kube.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lease := range l.Items {
		if lease.Namespace != "kube-system" { // the API server's own
			t.Errorf("a Lease after the dry run: %s/%s", lease.Namespace, lease.Name)
		}
	}
	if _, err := cp.Dynamic.Resource(kube.MachineConfigs).Get(ctx, rendered, metav1.GetOptions{}); err == nil {
		t.Errorf("the dry run stored %s", rendered)
	}
	after := pool()
	if after.GetResourceVersion() != before.GetResourceVersion() {
		spec, _, _ := unstructured.NestedMap(after.Object, "spec")
		t.Errorf("the dry run changed the pool: %v", spec)
	}
}

// A dry run that cannot read what it renders from says what to check, at
// once: the API server refusing the user, not serving MachineConfigPools,
// or not reached at all.
func TestControllerDryRunHints(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		kc := writeKubeconfig(t, &rest.Config{Host: "http://127.0.0.1:1"})
		err := runDryRun(t, kc)
		if err == nil || !strings.Contains(err.Error(), "is the API server at http://127.0.0.1:1 reachable from here") {
			t.Errorf("unreachable API server: %v", err)
		}
	})
	cp := kubetest.New(t, false)
	for _, tc := range []struct {
		name   string
		code   int
		reason metav1.StatusReason
		want   string
	}{
		{"forbidden", http.StatusForbidden, metav1.StatusReasonForbidden, "a dry run needs the rights of deploy/controller/controller.yaml's ClusterRole"},
		{"not served", http.StatusNotFound, metav1.StatusReasonNotFound, "serves no machineconfigpools.machineconfiguration.openshift.io: is the kubeconfig's context an OpenShift cluster"},
		{"credentials", http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "refused the kubeconfig's credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := kubetest.Recorder{Intercept: func(w http.ResponseWriter, req *http.Request) bool {
				if !strings.Contains(req.URL.Path, "/machineconfigpools") {
					return false
				}
				kubetest.Refuse(w, tc.code, tc.reason, "refused by the test")
				return true
			}}
			err := runDryRun(t, writeKubeconfig(t, rec.Proxy(t, cp.Admin)))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "listing machineconfigpools") {
				t.Errorf("%s: %v", tc.name, err)
			}
		})
	}
}

// runDryRun runs mcs controller --dry-run until it ends by itself.
func runDryRun(t *testing.T, kubeconfig string) error {
	t.Helper()
	in := startSubcommand(t, false, "controller", "--dry-run", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0")
	err := <-in.done
	in.done <- err
	return err
}
