package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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
