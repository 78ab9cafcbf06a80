package kube

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
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
	s.mcs, s.pools, s.ccs = newStore(), newStore(), newStore()
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
