package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

func loadCached(t *testing.T, dir string, c *ParseCache) []*Result {
	t.Helper()
	l := &Loader{Cache: c}
	l.Path(dir)
	set, err := l.Set()
	if err != nil {
		t.Fatal(err)
	}
	rs, errs := set.Render(Options{})
	if errs != nil {
		t.Fatal(errs)
	}
	return rs
}

// A cached load renders exactly what an uncached one does, before and after
// a file changes, and the cache holds only what the tree holds.
func TestParseCache(t *testing.T) {
	dir := t.TempDir()
	src := "../fixtures/cluster"
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(src, e.Name()))
		os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
	}
	c := &ParseCache{}
	check := func(stage string) {
		t.Helper()
		cached, uncached := loadCached(t, dir, c), loadCached(t, dir, nil)
		for i := range cached {
			a, _ := convert.Marshal(cached[i].MachineConfig, false)
			b, _ := convert.Marshal(uncached[i].MachineConfig, false)
			if cached[i].Name != uncached[i].Name || !bytes.Equal(a, b) {
				t.Fatalf("%s: pool %s differs with the cache", stage, cached[i].Pool)
			}
		}
	}
	check("first load")
	n := c.size()
	check("second load")
	if c.size() != n {
		t.Fatalf("cache grew from %d to %d on an unchanged tree", n, c.size())
	}
	ssh := filepath.Join(dir, "99-worker-ssh.yaml")
	b, _ := os.ReadFile(ssh)
	os.WriteFile(ssh, []byte(strings.Replace(string(b), "admin@bastion", "admin2@bastion", 1)), 0o644)
	check("after an edit")
	fresh := &ParseCache{}
	loadCached(t, dir, fresh)
	if c.size() != fresh.size() {
		t.Fatalf("cache holds %d configs, the tree %d: an old version was not dropped", c.size(), fresh.size())
	}
}

func BenchmarkLoadRealdataCached(b *testing.B) {
	dir := realdataDir(b, "aws")
	c := &ParseCache{}
	b.ReportAllocs()
	for b.Loop() {
		l := &Loader{Cache: c}
		l.Path(dir)
		if _, err := l.Set(); err != nil {
			b.Fatal(err)
		}
	}
}
