package tree

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// Digest keys content and presence, not size and time; it reads within
// its limits (a file over them is keyed by why it was not read and by its
// stat, so a write to it is seen though its bytes are not read) and never
// blocks on a FIFO.
func TestDigest(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{"a/x.yaml": "one", "b.yaml": "two", "big": "0123456789"})
	lim := Limits{MaxFileSize: 5}
	at := time.Unix(1_700_000_000, 0)
	set := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	set("a/x.yaml", "one")
	base := noMemo.Digest(lim, dir)
	if again := noMemo.Digest(lim, dir); again != base {
		t.Fatal("the digest of an unchanged tree changed")
	}
	for _, c := range []struct {
		name   string
		change func()
		same   bool
	}{
		{"same size and mtime, other bytes", func() { set("a/x.yaml", "ONE") }, false},
		{"over the per-file limit: keyed by stat", func() { set("big", "9876543210") }, false},
		{"a file removed", func() { os.Remove(filepath.Join(dir, "b.yaml")) }, false},
		{"a FIFO added", func() {
			if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.change()
			now := noMemo.Digest(lim, dir)
			if (now == base) != c.same {
				t.Errorf("digest unchanged: %v, want %v", now == base, c.same)
			}
			base = now
		})
	}
	if noMemo.Digest(lim, filepath.Join(dir, "b.yaml")) == noMemo.Digest(lim, filepath.Join(dir, "c.yaml")) {
		t.Error("two absent paths share a key")
	}
}

// Entries keys a tree as Load reads it: a link leading out of the tree is
// keyed by where it leads, its target neither read nor entered, and an
// edit inside names its path alone.
func TestEntries(t *testing.T) {
	out := testkit.WriteTree(t, map[string]string{"secret": "one", "d/x.yaml": "two"})
	dir := testkit.WriteTree(t, map[string]string{"a.yaml": "three", "b.yaml": "four"})
	for name, target := range map[string]string{"leak.yaml": "secret", "outdir": "d"} {
		if err := os.Symlink(filepath.Join(out, target), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	changed := func(before, after []Entry) []string {
		var paths []string
		for i := range after {
			if i >= len(before) || after[i] != before[i] {
				paths = append(paths, filepath.Base(after[i].Path))
			}
		}
		return paths
	}
	base := noMemo.Entries(Limits{}, dir)
	if len(base) != 5 {
		t.Fatalf("%d entries, want the tree, its two files and two links, none entered: %v", len(base), base)
	}
	for _, c := range []struct {
		name   string
		change func()
		want   []string
	}{
		{"the target outside edited", func() { os.WriteFile(filepath.Join(out, "secret"), []byte("ONE"), 0o600) }, nil},
		{"a file in the tree edited", func() { os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("FOUR"), 0o600) }, []string{"b.yaml"}},
		{"the link out retargeted", func() {
			os.Remove(filepath.Join(dir, "leak.yaml"))
			os.Symlink(filepath.Join(out, "d", "x.yaml"), filepath.Join(dir, "leak.yaml"))
		}, []string{"leak.yaml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.change()
			now := noMemo.Entries(Limits{}, dir)
			if got := changed(base, now); !slices.Equal(got, c.want) {
				t.Errorf("changed %q, want %q", got, c.want)
			}
			base = now
		})
	}
}
