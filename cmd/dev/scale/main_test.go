package main

import (
	"slices"
	"testing"

	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/render"
)

// The generated tree renders: master, worker and n custom pools, each custom
// pool merging the worker MachineConfigs and its own.
func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	const n = 3
	if err := generate("../../../fixtures/cluster", dir, n); err != nil {
		t.Fatal(err)
	}
	set := servetest.Load(t, dir)
	if got := len(set.PoolNames()); got != n+2 {
		t.Fatalf("%d pools %v, want %d", got, set.PoolNames(), n+2)
	}
	res, err := set.RenderPool(customName(1), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mc := range []string{"50-" + customName(1), "60-worker-scale"} {
		if !slices.Contains(res.MachineConfigs, mc) {
			t.Errorf("%s merges %v, want %s among them", customName(1), res.MachineConfigs, mc)
		}
	}
	if slices.Contains(res.MachineConfigs, "50-"+customName(0)) {
		t.Errorf("%s merges another custom pool's config: %v", customName(1), res.MachineConfigs)
	}
}
