package kube

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source"
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

// A load reads of a pool what a render reads (renderedPart), never a stale
// copy: after writes that change only what it leaves out (the rendered
// config the pool names, its status), a selector change is rendered; a
// field unknown to this release in the pool's spec is still reported; the
// cache's pool is left as it was.
func TestLoadSelfReadsPoolsAsTheyAre(t *testing.T) {
	s := cachedSource(t, clusterDir(t, "aws"), Config{})
	update := func(rv string, change func(u *unstructured.Unstructured)) {
		t.Helper()
		u := get(s.pools, "worker").DeepCopy()
		u.SetResourceVersion(rv)
		change(u)
		if err := s.pools.Update(u); err != nil {
			t.Fatal(err)
		}
	}
	load := func() *source.Input {
		t.Helper()
		in, err := s.Load(context.Background())
		if err != nil || len(in.Failed) != 0 {
			t.Fatalf("%v %v", err, in.Failed)
		}
		return in
	}
	members := func(in *source.Input) []string {
		return servetest.ByPool(in.Results)["worker"].MachineConfigs
	}
	before := members(load())
	update("w1", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "rendered-worker-1", "spec", "configuration", "name")
		_ = unstructured.SetNestedField(u.Object, int64(3), "status", "machineCount")
	})
	if got := members(load()); !slices.Equal(got, before) {
		t.Fatalf("a configuration change changed the worker's MachineConfigs: %v, was %v", got, before)
	}
	update("w2", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, map[string]any{"matchLabels": map[string]any{"machineconfiguration.openshift.io/role": "master"}}, "spec", "machineConfigSelector")
		_ = unstructured.SetNestedField(u.Object, "x", "spec", "machineConfigSelectr")
	})
	in := load()
	if got := members(in); slices.Equal(got, before) || !slices.Contains(got, "00-master") {
		t.Fatalf("the worker pool selecting master's MachineConfigs renders %v", got)
	}
	if !slices.ContainsFunc(in.Warnings, func(w string) bool { return strings.Contains(w, "machineConfigSelectr") }) {
		t.Fatalf("no warning of the pool's unknown field in %v", in.Warnings)
	}
	if c, _, _ := unstructured.NestedString(get(s.pools, "worker").Object, "spec", "configuration", "name"); c != "rendered-worker-1" {
		t.Fatalf("the cached pool's configuration is %q", c)
	}
}
