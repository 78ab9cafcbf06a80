package main

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/tree"
)

// The generated tree renders: master, worker and n custom pools, each custom
// pool merging the worker MachineConfigs and its own.
func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	const n = 3
	if err := generate("../../../fixtures/cluster", dir, n); err != nil {
		t.Fatal(err)
	}
	set, err := tree.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
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

// cpu reads this process's CPU time, which grows as it works (busy for up
// to 10 s of wall time, however loaded the machine).
func TestCPU(t *testing.T) {
	before, err := cpu(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 10*time.Second; {
		after, err := cpu(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
	}
	t.Fatal("no CPU time counted in 10 s of work")
}
