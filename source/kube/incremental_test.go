package kube

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/render"
)

// Self mode re-renders only the pools whose objects changed: a new master
// MachineConfig renders master again and carries worker; a pool's status
// and resourceVersion, which the cluster bumps all the time, render nothing.
func TestLoadSelfRerendersOnlyChangedPools(t *testing.T) {
	s := cachedSource(t, clusterDir(t, "aws"), Config{})
	load := func() map[string]*render.Result {
		t.Helper()
		in, err := s.Load(context.Background())
		if err != nil || len(in.Failed) != 0 {
			t.Fatalf("%v %v", err, in.Failed)
		}
		return servetest.ByPool(in.Results)
	}
	first := load()

	for _, obj := range s.pools.List() {
		u := obj.(*unstructured.Unstructured).DeepCopy()
		u.SetResourceVersion(u.GetResourceVersion() + "1")
		if err := unstructured.SetNestedField(u.Object, int64(7), "status", "machineCount"); err != nil {
			t.Fatal(err)
		}
		if err := s.pools.Update(u); err != nil {
			t.Fatal(err)
		}
	}
	if again := load(); again["worker"] != first["worker"] || again["master"] != first["master"] {
		t.Fatal("a pool's status change rendered it again")
	}

	mc := &unstructured.Unstructured{}
	if err := mc.UnmarshalJSON([]byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig",
	  "metadata":{"name":"60-master-extra","labels":{"machineconfiguration.openshift.io/role":"master"}},
	  "spec":{"config":{"ignition":{"version":"3.2.0"}},"kernelArguments":["nosmt"]}}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.mcs.Add(mc); err != nil {
		t.Fatal(err)
	}
	next := load()
	if next["worker"] != first["worker"] {
		t.Fatal("worker rendered again for a master MachineConfig")
	}
	if next["master"] == first["master"] || next["master"].Name == first["master"].Name {
		t.Fatal("master not rendered again")
	}
}
