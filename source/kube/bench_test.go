package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/render"
)

// cachedSource is a Source whose informer caches hold the objects of a
// directory of YAML, as if synced from an API server that is not there.
func cachedSource(tb testing.TB, dir string, cfg Config) *Source {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		tb.Skipf("no real data in %s", dir)
	}
	cfg.REST = &rest.Config{Host: "https://127.0.0.1:1"}
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	s.mcs, s.pools, s.ccs = cache.NewIndexer(cache.MetaNamespaceKeyFunc, inputIndexers), newStore(), newStore()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for _, u := range decodeObjects(tb, data) {
			st := map[string]cache.Store{"MachineConfig": s.mcs, "MachineConfigPool": s.pools, "ControllerConfig": s.ccs}[u.GetKind()]
			if st == nil {
				continue
			}
			if u.GetKind() == "ControllerConfig" {
				u.SetName(DefaultControllerConfig)
			}
			if err := st.Add(u); err != nil {
				tb.Fatal(err)
			}
		}
	}
	close(s.synced)
	return s
}

func newStore() cache.Store { return cache.NewStore(cache.MetaNamespaceKeyFunc) }

func BenchmarkLoadSelf(b *testing.B) {
	s := cachedSource(b, clusterDir(b, "aws"), Config{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Load(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOnePoolEdit is the controller's load and render after one
// custom pool's MachineConfig changed (at 2 pools, a worker MachineConfig:
// the worker pool alone changes), in realdata/aws with N custom pools
// beside it (each selecting the worker configs and one of its own) and the
// rendered configs ten worker edits leave (metadata only, as self mode
// caches them): what a one-pool edit costs the controller at each size.
// after-worker-edit: every pool was written since the last load (each
// names a new rendered config), as in BenchmarkEditToPointed, where a
// one-pool edit follows each worker edit.
func BenchmarkOnePoolEdit(b *testing.B) {
	for _, bc := range []struct {
		custom       int
		poolsPatched bool
	}{{0, false}, {18, false}, {100, false}, {100, true}} {
		custom, poolsPatched := bc.custom, bc.poolsPatched
		name := fmt.Sprintf("pools=%d", custom+2)
		if poolsPatched {
			name += "/after-worker-edit"
		}
		b.Run(name, func(b *testing.B) {
			s := cachedSource(b, clusterDir(b, "aws"), Config{})
			addObjects(b, s.pools, func(i int) string { return mctest.Pool(fmt.Sprintf("custom-%03d", i)) }, custom)
			addObjects(b, s.mcs, func(i int) string {
				name := fmt.Sprintf("custom-%03d", i)
				return mctest.MachineConfig("60-"+name, name, name)
			}, custom)
			for i := range 10 * (custom + 1) {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion(render.APIVersion)
				u.SetKind(render.KindMachineConfig)
				u.SetName(fmt.Sprintf("rendered-%d", i))
				yes := true
				u.SetOwnerReferences([]metav1.OwnerReference{{Kind: render.KindMachineConfigPool, Name: "worker", Controller: &yes}})
				if err := s.mcs.Add(u); err != nil {
					b.Fatal(err)
				}
			}
			edited := "60-custom-000"
			if custom == 0 {
				edited = "99-worker-bench"
			}
			role := strings.TrimPrefix(edited, "60-")
			if custom == 0 {
				role = "worker"
			}
			edit := func(i int) {
				u := decodeObjects(b, []byte(mctest.MachineConfig(edited, role, fmt.Sprint(i))))[0]
				u.SetResourceVersion(fmt.Sprint(i + 1))
				if err := s.mcs.Update(u); err != nil {
					b.Fatal(err)
				}
			}
			edit(0)
			if _, err := s.Load(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 1; b.Loop(); i++ {
				if poolsPatched {
					patchPools(b, s.pools, i)
				}
				edit(i)
				in, err := s.Load(context.Background())
				if err != nil || len(in.Failed) > 0 {
					b.Fatal(err, in.Failed)
				}
			}
		})
	}
}

// patchPools gives every pool of st a new resourceVersion and
// configuration, as a worker edit's writes do (outside the timing).
func patchPools(b *testing.B, st cache.Store, i int) {
	b.StopTimer()
	defer b.StartTimer()
	for _, o := range st.List() {
		u := o.(*unstructured.Unstructured).DeepCopy()
		u.SetResourceVersion(fmt.Sprint("p", i))
		if err := unstructured.SetNestedField(u.Object, fmt.Sprint("rendered-", u.GetName(), "-", i), "spec", "configuration", "name"); err != nil {
			b.Fatal(err)
		}
		if err := st.Update(u); err != nil {
			b.Fatal(err)
		}
	}
}

// addObjects adds n objects to st, the YAML of each from object(i).
func addObjects(b *testing.B, st cache.Store, object func(i int) string, n int) {
	for i := range n {
		for _, u := range decodeObjects(b, []byte(object(i))) {
			u.SetResourceVersion("1")
			if err := st.Add(u); err != nil {
				b.Fatal(err)
			}
		}
	}
}
