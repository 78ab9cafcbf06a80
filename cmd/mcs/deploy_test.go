package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/preflight"
)

// The Deployment runs mcs with flags mcs has, and gives it the time they
// ask for on SIGTERM: the drain, then the in-flight grace.
func TestDeploymentFlags(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) == 0 || pod.Containers[0].Name != "mcs" || pod.TerminationGracePeriodSeconds == nil {
		t.Fatalf("no mcs container with terminationGracePeriodSeconds in %+v", pod)
	}
	o, err := parseFlags(pod.Containers[0].Args, io.Discard)
	if err != nil || o == nil {
		t.Fatalf("the Deployment's args %q: %v", pod.Containers[0].Args, err)
	}
	if o.ShutdownDelay == 0 {
		t.Error("no --shutdown-delay: nodes are sent to a closed port while endpoints update")
	}
	if need := o.ShutdownDelay + o.ShutdownGrace; time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second <= need {
		t.Errorf("terminationGracePeriodSeconds %d, but delay and grace take %v", *pod.TerminationGracePeriodSeconds, need)
	}
	checkAdminPort(t, o.ListenAdmin, o.AdminOnly, pod.Containers[0].Ports)
}

// checkAdminPort: /status and /metrics only on the admin port, which the
// PodMonitor scrapes and the NetworkPolicy opens to monitoring namespaces
// alone, while the config ports stay open to all.
func checkAdminPort(t *testing.T, listenAdmin string, adminOnly bool, ports []corev1.ContainerPort) {
	t.Helper()
	read := func(name string, into any) {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
		if err == nil {
			err = yaml.UnmarshalStrict(b, into)
		}
		if err != nil {
			t.Fatalf("deploy/%s: %v", name, err)
		}
	}
	var pm struct {
		Spec struct {
			Endpoints []struct{ Port, Path string } `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	b, _ := os.ReadFile(filepath.Join("..", "..", "deploy", "podmonitor.yaml"))
	if err := yaml.Unmarshal(b, &pm); err != nil || len(pm.Spec.Endpoints) != 1 {
		t.Fatalf("deploy/podmonitor.yaml: %v", err)
	}
	scraped := slices.IndexFunc(ports, func(p corev1.ContainerPort) bool { return p.Name == pm.Spec.Endpoints[0].Port })
	if !adminOnly || listenAdmin == "" || scraped < 0 || ":"+fmt.Sprint(ports[scraped].ContainerPort) != listenAdmin {
		t.Fatalf("--admin-only %v, --listen-admin %q; the PodMonitor scrapes port %q of %+v", adminOnly, listenAdmin, pm.Spec.Endpoints[0].Port, ports)
	}
	var np networkingv1.NetworkPolicy
	read("networkpolicy.yaml", &np)
	open, limited := map[int32]bool{}, map[int32]bool{}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if len(rule.From) == 0 {
				open[p.Port.IntVal] = true
			} else {
				limited[p.Port.IntVal] = true
			}
		}
	}
	if !open[22623] || !open[22624] || open[ports[scraped].ContainerPort] || !limited[ports[scraped].ContainerPort] {
		t.Errorf("deploy/networkpolicy.yaml opens %v to all and %v to some; want the config ports to all, the admin port to some", open, limited)
	}
	k, _ := os.ReadFile(filepath.Join("..", "..", "deploy", "kustomization.yaml"))
	if !strings.Contains(string(k), "- networkpolicy.yaml") {
		t.Error("deploy/kustomization.yaml does not apply networkpolicy.yaml")
	}
}

// deploy/openshift grants what mcs preflight checks, and nothing more but
// the host network's SecurityContextConstraints; the DaemonSet's arguments
// are mcs start's.
func TestOpenShiftRBAC(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy", "openshift")
	b, err := os.ReadFile(filepath.Join(dir, "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	granted := map[string]bool{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var role struct {
			Kind     string
			Metadata struct{ Namespace string }
			Rules    []struct{ APIGroups, Resources, ResourceNames, Verbs []string }
		}
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					names := r.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, n := range names {
						for _, v := range r.Verbs {
							granted[strings.Join([]string{v, g, res, role.Metadata.Namespace, n}, " ")] = true
						}
					}
				}
			}
		}
	}
	want := map[string]bool{"use security.openshift.io securitycontextconstraints  hostnetwork": true}
	for _, g := range preflight.Grants() {
		want[g] = true
	}
	for g := range granted {
		if !want[g] {
			t.Errorf("granted and not needed: %s", g)
		}
	}
	for w := range want {
		if !granted[w] {
			t.Errorf("needed and not granted: %s", w)
		}
	}
	// The manifest's URL is a placeholder mcs start refuses (mcs cutover
	// apply puts the cluster's in); with the cluster's, its arguments are
	// mcs start's.
	tokens := tokenDir(t)
	if args := daemonSetArgs(t); len(args) == 0 || args[0] != "start" {
		t.Fatalf("arguments %q: not mcs start", args)
	} else if _, err := parseStartFlags(append(args[1:], "--bootstrap-token-dir", tokens), io.Discard); err == nil {
		t.Errorf("the DaemonSet's arguments %q: the placeholder URL accepted", args)
	}
	args := daemonSetArgs(t, "--apiserver-url=https://api-int.c.example.com:6443")
	if _, err := parseStartFlags(append(args[1:], "--bootstrap-token-dir", tokens), io.Discard); err != nil {
		t.Errorf("the DaemonSet's arguments %q: %v", args, err)
	}
}
