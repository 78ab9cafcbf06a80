package cutover

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// Without manifests given, New takes deploy/openshift's, whose DaemonSet
// it needs; without clients it refuses.
func TestNewDefaultsToTheBuiltInManifests(t *testing.T) {
	c, err := New(Config{Kube: kubefake.NewClientset(), Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())})
	if err != nil {
		t.Fatal(err)
	}
	if ds := manifest(c.cfg.Manifests, "DaemonSet"); ds == nil || ds.GetName() != DaemonSet {
		t.Errorf("manifests %d, DaemonSet %v", len(c.cfg.Manifests), ds)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("no clients accepted")
	}
}
