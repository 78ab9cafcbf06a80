package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/rendertest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source"
)

// target is a Target that serves nothing: it keeps the snapshot swapped
// in last and the failure reported last.
type target struct {
	snap atomic.Pointer[Snapshot]
	mu   sync.Mutex
	last *Failure
}

func (t *target) Snapshot() *Snapshot { return t.snap.Load() }
func (t *target) Swap(snap *Snapshot) { t.snap.Store(snap) }
func (t *target) Health() Health      { return t }
func (t *target) Warned([]string)     {}
func (t *target) PolicyRefused(error) {}
func (t *target) Took(time.Duration)  {}
func (t *target) SetStuck(*Stuck)     {}
func (t *target) Failed(f *Failure)   { t.mu.Lock(); t.last = f; t.mu.Unlock() }

// failed is the failure reported last, or nil.
func (t *target) failed() *Failure {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// A load that finds no pools at all keeps every pool's last good render and
// says so; one that drops a single pool drops it.
func TestReloadEmptySourceKeepsServing(t *testing.T) {
	w, m := rendertest.Result(t, "worker", rendertest.PlainIgn), rendertest.Result(t, "master", rendertest.PlainIgn)
	src := &rendertest.Source{Loads: []rendertest.Load{
		{In: &source.Input{Results: []*render.Result{w, m}}},
		{In: &source.Input{}},
		{In: &source.Input{Results: []*render.Result{w}}},
	}}
	srv := &target{}
	rl := &Reloader{Source: src, Server: srv}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := rl.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "the source has no pools any more") {
		t.Fatalf("empty load: %v, want the source's pools gone", err)
	}
	if got := rl.Server.Snapshot().Names(); len(got) != 2 {
		t.Fatalf("after an empty load, serving %v, want master and worker", got)
	}
	if f := srv.failed(); f == nil || !strings.Contains(f.Err().Error(), "no pools") {
		t.Errorf("reported failure %+v, want the empty source named", f)
	}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rl.Server.Snapshot().Names(); len(got) != 1 || got[0] != "worker" {
		t.Fatalf("after dropping master, serving %v, want worker", got)
	}
}

// A pool whose newest render fails keeps its last good render, re-encoded
// with the node files of the day: a rotated kubeconfig reaches it too.
func TestReloadFailedPoolGetsNewNodeFiles(t *testing.T) {
	w, m := rendertest.Result(t, "worker", rendertest.PlainIgn), rendertest.Result(t, "master", rendertest.PlainIgn)
	src := &rendertest.Source{Loads: []rendertest.Load{
		{In: &source.Input{Results: []*render.Result{w, m}}},
		{In: &source.Input{Results: []*render.Result{m}, Failed: map[string]error{"worker": errors.New("broken")}}},
	}}
	kubeconfig := []byte("apiVersion: v1\nkind: Config\n# old\n")
	srv := &target{}
	rl := &Reloader{Source: src, Server: srv, NodeFiles: func() (render.NodeFiles, error) { return render.NodeFiles{Kubeconfig: kubeconfig}, nil }}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	old := rl.Server.Snapshot().Pool("worker")
	kubeconfig = []byte("apiVersion: v1\nkind: Config\n# rotated\n")
	if err := rl.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("second load: %v, want worker's failure", err)
	}
	p := rl.Server.Snapshot().Pool("worker")
	if p == nil || p.Result() != w {
		t.Fatal("worker does not serve its last good render")
	}
	if p == old || p.node != (render.NodeFiles{Kubeconfig: kubeconfig}).Key(nil) {
		t.Error("worker kept the node files of before the rotation")
	}
}

// The Reloader builds each snapshot from the one served: a source that
// hands back a pool's earlier Result gets that pool's responses carried.
func TestReloadCarriesUnchangedPools(t *testing.T) {
	worker, infra := rendertest.Result(t, "worker", rendertest.PlainIgn), rendertest.Result(t, "infra", rendertest.KargsIgn)
	src := &rendertest.Source{Loads: []rendertest.Load{
		{In: &source.Input{Results: []*render.Result{worker, infra}}},
		{In: &source.Input{Results: []*render.Result{worker, rendertest.Result(t, "infra", rendertest.PlainIgn)}}},
	}}
	srv := &target{}
	rl := &Reloader{Source: src, Server: srv}
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := rl.Server.Snapshot()
	if err := rl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := rl.Server.Snapshot()
	if second.Pool("worker") != first.Pool("worker") || second.Pool("infra") == first.Pool("infra") {
		t.Fatal("the reload did not carry worker alone")
	}
	if second.Rerendered != 1 || second.Carried != 1 {
		t.Fatalf("rerendered %d carried %d", second.Rerendered, second.Carried)
	}
}

func TestBuildSnapshotFromNodeFilesChanged(t *testing.T) {
	worker := rendertest.Result(t, "worker", rendertest.PlainIgn)
	for _, tc := range []struct {
		name string
		cc   *render.ControllerConfig
		nf   render.NodeFiles
	}{
		{"kubeconfig", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}, render.NodeFiles{Kubeconfig: []byte("other")}},
		{"kubelet CA override", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}, render.NodeFiles{Kubeconfig: []byte("kc"), KubeletCA: []byte("ca2")}},
		{"served CA", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca2")}, render.NodeFiles{Kubeconfig: []byte("kc")}},
		{"cloud CA", &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca"), CloudProviderCAData: []byte("cloud")}, render.NodeFiles{Kubeconfig: []byte("kc")}},
		{"no ControllerConfig", nil, render.NodeFiles{Kubeconfig: []byte("kc")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, err := BuildSnapshot(1, []*render.Result{worker}, &render.ControllerConfig{KubeAPIServerServingCAData: []byte("ca")}, render.NodeFiles{Kubeconfig: []byte("kc")})
			if err != nil {
				t.Fatal(err)
			}
			next, err := BuildSnapshotFrom(first, 2, []*render.Result{worker}, tc.cc, tc.nf)
			if err != nil {
				t.Fatal(err)
			}
			if next.Carried != 0 || next.Pool("worker") == first.Pool("worker") {
				t.Fatal("carried a pool whose node files changed")
			}
			if first.Pool("worker").Response(worker.Spec).ETag[0] == next.Pool("worker").Response(worker.Spec).ETag[0] {
				t.Fatal("same ETag for other node files")
			}
		})
	}
}
