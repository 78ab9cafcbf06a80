package source

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/tree"
)

func byPool(in *Input) map[string]*render.Result {
	out := map[string]*render.Result{}
	for _, r := range in.Results {
		out[r.Pool] = r
	}
	return out
}

func TestRendererRerendersOnlyChangedPools(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "50-worker", "worker")
	write(t, dir, "50-master", "master")
	d := &Dir{Path: dir}
	load := func() map[string]*render.Result {
		t.Helper()
		in, err := d.Load(context.Background())
		if err != nil || len(in.Failed) != 0 {
			t.Fatalf("%v %v", err, in.Failed)
		}
		return byPool(in)
	}
	first := load()
	if again := load(); again["worker"] != first["worker"] || again["master"] != first["master"] {
		t.Fatal("an unchanged tree rendered its pools again")
	}
	write(t, dir, "60-master", "master")
	next := load()
	if next["worker"] != first["worker"] {
		t.Fatal("worker rendered again although only master's MachineConfigs changed")
	}
	if next["master"] == first["master"] || len(next["master"].MachineConfigs) != 2 {
		t.Fatalf("master not rendered again: %v", next["master"].MachineConfigs)
	}
	// Fresh state renders everything: the same content and key, another
	// result.
	fresh := byPool(new(Renderer).Render(mustSet(t, dir), render.Options{}, nil))
	if fresh["worker"] == next["worker"] || fresh["worker"].Name != next["worker"].Name || fresh["worker"].Key != next["worker"].Key {
		t.Fatal("a fresh Renderer did not render anew, or gave another key")
	}
}

func TestRendererKeepsFailuresUntilFixed(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "50-worker", "worker")
	write(t, dir, "50-master", "master")
	bad := filepath.Join(dir, "60-master.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata: {name: 60-master, labels: {machineconfiguration.openshift.io/role: master}}\nspec: {kernelType: turbo}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var r Renderer
	in := r.Render(mustSet(t, dir), render.Options{}, nil)
	again := r.Render(mustSet(t, dir), render.Options{}, nil)
	if in.Failed["master"] == nil || again.Failed["master"] != in.Failed["master"] {
		t.Fatalf("failure not kept: %v then %v", in.Failed, again.Failed)
	}
	os.Remove(bad)
	fixed := r.Render(mustSet(t, dir), render.Options{}, nil)
	if len(fixed.Failed) != 0 || byPool(fixed)["master"] == nil {
		t.Fatalf("fixed pool still failing: %v", fixed.Failed)
	}
	if byPool(fixed)["worker"] != byPool(in)["worker"] {
		t.Fatal("worker rendered again")
	}
}

// Each result rendered anew is handed on as soon as it is, and only those:
// a pool kept from the last render is not.
func TestRendererHandsOnEachRender(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "50-worker", "worker")
	write(t, dir, "50-master", "master")
	var r Renderer
	var mu sync.Mutex
	var got []string
	each := func(res *render.Result) { mu.Lock(); got = append(got, res.Pool); mu.Unlock() }
	first := byPool(r.Render(mustSet(t, dir), render.Options{}, each))
	slices.Sort(got)
	if !slices.Equal(got, []string{"master", "worker"}) || first["worker"] == nil {
		t.Fatalf("first render handed on %v", got)
	}
	got = nil
	write(t, dir, "60-master", "master")
	next := byPool(r.Render(mustSet(t, dir), render.Options{}, each))
	if !slices.Equal(got, []string{"master"}) || next["worker"] != first["worker"] {
		t.Fatalf("after a master edit handed on %v", got)
	}
}

func TestRendererOptionsRerenderAll(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "50-worker", "worker")
	var r Renderer
	before := byPool(r.Render(mustSet(t, dir), render.Options{}, nil))
	after := byPool(r.Render(mustSet(t, dir), render.Options{ControllerVersion: "v2"}, nil))
	if after["worker"] == before["worker"] {
		t.Fatal("changed options kept the old render")
	}
}

func mustSet(t *testing.T, dir string) *render.Set {
	t.Helper()
	set, err := tree.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}
