package tree

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// Digest keys content and presence, not size and time; it reads within
// its limits (a file over them is keyed by why it was not read, so its
// bytes are not) and never blocks on a FIFO.
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
	base := Digest(lim, dir)
	if again := Digest(lim, dir); again != base {
		t.Fatal("the digest of an unchanged tree changed")
	}
	for _, c := range []struct {
		name   string
		change func()
		same   bool
	}{
		{"same size and mtime, other bytes", func() { set("a/x.yaml", "ONE") }, false},
		{"over the per-file limit: not read", func() { set("big", "9876543210") }, true},
		{"a file removed", func() { os.Remove(filepath.Join(dir, "b.yaml")) }, false},
		{"a FIFO added", func() {
			if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.change()
			now := Digest(lim, dir)
			if (now == base) != c.same {
				t.Errorf("digest unchanged: %v, want %v", now == base, c.same)
			}
			base = now
		})
	}
	if Digest(lim, filepath.Join(dir, "b.yaml")) == Digest(lim, filepath.Join(dir, "c.yaml")) {
		t.Error("two absent paths share a key")
	}
}
