package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The Deployment runs mcs with flags mcs has, and gives it the time they
// ask for on SIGTERM: the drain, then the in-flight grace.
func TestDeploymentFlags(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					TerminationGracePeriodSeconds int64
					Containers                    []struct {
						Name string
						Args []string
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) == 0 || pod.Containers[0].Name != "mcs" {
		t.Fatalf("no mcs container in %+v", pod)
	}
	o, err := parseFlags(pod.Containers[0].Args, io.Discard)
	if err != nil || o == nil {
		t.Fatalf("the Deployment's args %q: %v", pod.Containers[0].Args, err)
	}
	if o.shutdownDelay == 0 {
		t.Error("no --shutdown-delay: nodes are sent to a closed port while endpoints update")
	}
	if need := o.shutdownDelay + o.shutdownGrace; time.Duration(pod.TerminationGracePeriodSeconds)*time.Second <= need {
		t.Errorf("terminationGracePeriodSeconds %d, but delay and grace take %v", pod.TerminationGracePeriodSeconds, need)
	}
}
