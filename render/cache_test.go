package render

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/mctest"
)

func loadCached(t *testing.T, dir string, c *ParseCache) []*Result {
	t.Helper()
	l := &Loader{Cache: c}
	readPath(l, dir)
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
		readPath(l, dir)
		if _, err := l.Set(); err != nil {
			b.Fatal(err)
		}
	}
}

// A load given a stream it decoded before takes the objects kept from
// then, never stale ones: a stream whose bytes changed under the same
// name is decoded again, a stream that failed fails again (its errors are
// not kept), the same bytes read from an API server rather than a file
// are decoded again (an unknown field is a warning there, an error in a
// file; objects from files keep their lines). Butane: see
// TestDecodedKeptButane.
func TestDecodedKept(t *testing.T) {
	c := &ParseCache{}
	load := func(fromAPI bool, streams ...string) (*Set, error) {
		l := &Loader{Cache: c, FromAPIServer: fromAPI}
		for _, s := range streams {
			l.Data("kubernetes", []byte(s))
		}
		return l.Set()
	}
	t.Run("changed bytes", func(t *testing.T) {
		for _, want := range []string{"one", "two", "one"} {
			set, err := load(true, mctest.MachineConfig("99-worker-x", "worker", want))
			if err != nil {
				t.Fatal(err)
			}
			if got := content(t, set); got != want {
				t.Fatalf("rendered %q after the MachineConfig changed to %q", got, want)
			}
		}
	})
	unknown := strings.Replace(mctest.MachineConfig("99-worker-x", "worker", "one"), "spec:", "spec:\n  kernelArgs: [a]", 1)
	t.Run("errors not kept", func(t *testing.T) {
		for i := range 2 {
			if _, err := load(false, unknown); err == nil || !strings.Contains(err.Error(), "kernelArgs") {
				t.Fatalf("load %d of a MachineConfig with an unknown field: %v", i+1, err)
			}
		}
	})
	t.Run("from an API server", func(t *testing.T) {
		for _, fromAPI := range []bool{false, true, false, true} {
			set, err := load(fromAPI, unknown)
			if fromAPI != (err == nil) {
				t.Fatalf("from an API server %v: %v", fromAPI, err)
			}
			if fromAPI && !slices.ContainsFunc(set.Notices(), func(e *Error) bool { return strings.Contains(e.Error(), "kernelArgs") }) {
				t.Fatalf("from an API server: no warning of the unknown field in %v", set.Notices())
			}
		}
	})
	// A clean decoding differs by origin too: from a file the objects
	// keep where they were written, and a problem found later names its
	// line; from an API server there are no lines.
	badKernel := strings.Replace(mctest.MachineConfig("99-worker-k", "worker", "one"), "spec:", "spec:\n  kernelType: bogus", 1)
	t.Run("lines by origin", func(t *testing.T) {
		for _, fromAPI := range []bool{false, true, false, true} {
			set, err := load(fromAPI, badKernel)
			if err != nil {
				t.Fatal(err)
			}
			_, err = set.RenderPool("worker", Options{})
			var es *Errors
			if !errors.As(err, &es) || len(es.List) == 0 {
				t.Fatalf("from an API server %v: a bogus kernelType rendered: %v", fromAPI, err)
			}
			if line := es.List[0].Line; fromAPI != (line == 0) {
				t.Fatalf("from an API server %v: the problem is at line %d", fromAPI, line)
			}
		}
	})
}

// content is which of "one" and "two" the worker's rendered file holds.
func content(t *testing.T, set *Set) string {
	t.Helper()
	res, err := set.RenderPool("worker", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one", "two"} {
		if bytes.Contains(res.MachineConfig.Spec.Config, []byte("data:,"+want)) {
			return want
		}
	}
	return ""
}

// A Butane file is translated again on every load, its bytes unchanged:
// the local files it embeds may have changed.
func TestDecodedKeptButane(t *testing.T) {
	c := &ParseCache{}
	dir := t.TempDir()
	write(t, dir, "99-worker-bu.bu", "variant: openshift\nversion: 4.14.0\nmetadata:\n  name: 99-worker-bu\n  labels:\n    machineconfiguration.openshift.io/role: worker\nstorage:\n  files:\n  - path: /etc/bu\n    contents:\n      local: f.txt\n")
	for _, want := range []string{"one", "two"} {
		write(t, dir, "f.txt", want)
		l := &Loader{Cache: c}
		readPath(l, dir)
		set, err := l.Set()
		if err != nil {
			t.Fatal(err)
		}
		if got := content(t, set); got != want {
			t.Fatalf("rendered %q after the Butane file's local file changed to %q", got, want)
		}
	}
}
