package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// A rotated token (a Secret volume's files change) makes a reload, so the
// next node gets it without a restart.
func TestTokenRotationReloads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "token"), []byte("one"), 0o600)
		w := WithFiles(idleSource{}, []string{filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")}, 10*time.Millisecond)
		changed := watching(t, w)
		testkit.Advance(time.Minute) // many polls, on the bubble's clock
		select {
		case <-changed:
			t.Fatal("a change signalled before any")
		default:
		}
		os.WriteFile(filepath.Join(dir, "token"), []byte("two-longer"), 0o600)
		testkit.Advance(time.Second)
		select {
		case <-changed:
		default:
			t.Fatal("the rotated token signalled no change")
		}
	})
}

// idleSource is a source that never changes.
type idleSource struct{}

func (idleSource) Load(context.Context) (*Input, error)         { return &Input{}, nil }
func (idleSource) Watch(ctx context.Context, _ chan<- struct{}) { <-ctx.Done() }
func (idleSource) String() string                               { return "idle" }

// The polling watchers compare content: a same-size edit whose
// modification time is set back (a restored backup, a copy keeping times,
// a coarse-mtime file system) is a change, and an unchanged tree polled
// for a minute signals none.
func TestWatchersSeeContentEdits(t *testing.T) {
	for _, c := range []struct {
		name  string
		watch func(dir string) Source
		file  string
	}{
		{"files", func(dir string) Source {
			return WithFiles(idleSource{}, []string{filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")}, 10*time.Millisecond)
		}, "token"},
		{"bootstrap", func(dir string) Source { return &Bootstrap{Dir: dir, Poll: 10 * time.Millisecond} }, "machine-configs/rendered-master-1.yaml"},
		{"dir", func(dir string) Source { return &Dir{Path: dir, Poll: 10 * time.Millisecond} }, "50-worker.yaml"},
		// The bubble's clock is in 2000, so every key above is racy (read
		// each poll); on this clock, an hour after the tree was written,
		// keys are remembered and a poll reads only what its stat shows
		// changed.
		{"dir, keys remembered", func(dir string) Source {
			d := &Dir{Path: dir, Poll: 10 * time.Millisecond}
			written, err := os.Stat(dir)
			if err != nil {
				panic(err)
			}
			d.memo.Now = func() time.Time { return written.ModTime().Add(time.Hour) }
			return d
		}, "50-worker.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := testkit.WriteTree(t, map[string]string{c.file: "content-one", "machine-pools/master.yaml": "status: {}"})
				p := filepath.Join(dir, c.file)
				before, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				changed := watching(t, c.watch(dir))
				testkit.Advance(time.Minute)
				if len(changed) != 0 {
					t.Fatal("an unchanged tree signalled a change")
				}
				if err := os.WriteFile(p, []byte("content-two"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, before.ModTime(), before.ModTime()); err != nil {
					t.Fatal(err)
				}
				if after, _ := os.Stat(p); after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
					t.Fatalf("the edit changed size or mtime: %v %v → %v %v", before.Size(), before.ModTime(), after.Size(), after.ModTime())
				}
				testkit.Advance(time.Second)
				if len(changed) != 1 {
					t.Fatal("a same-size edit with its modification time set back signalled no change")
				}
			})
		})
	}
}

// Bootstrap.Watch keys the tree Dir alone: a link to a directory outside it
// is keyed by where it leads, never entered, so a write out there signals
// nothing while one in the tree does.
func TestBootstrapWatchStaysInTree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := testkit.WriteTree(t, map[string]string{"machine-configs/rendered-master-1.yaml": "one"})
		out := testkit.WriteTree(t, map[string]string{"x.yaml": "outside"})
		if err := os.Symlink(out, filepath.Join(dir, "machine-configs", "out")); err != nil {
			t.Fatal(err)
		}
		changed := watching(t, &Bootstrap{Dir: dir, Poll: 10 * time.Millisecond})
		testkit.Advance(time.Minute)
		rewrite(t, filepath.Join(out, "x.yaml"), "OUTSIDE, longer")
		if len(changed) != 0 {
			t.Fatal("a write outside Dir, through a link to a directory, signalled a change: the link was entered")
		}
		rewrite(t, filepath.Join(dir, "machine-configs", "rendered-master-1.yaml"), "two, longer")
		if len(changed) != 1 {
			t.Fatal("a write in Dir signalled no change")
		}
	})
}

// TestBootstrapWatchSeesLinkedConfig: Load opens a rendered config by path,
// following a link out of Dir, so an edit to the link's target is served by
// the next load and must signal one (the tree's key alone keys such a link
// by its target only).
func TestBootstrapWatchSeesLinkedConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := testkit.WriteTree(t, map[string]string{"machine-pools/master.yaml": "status: {configuration: {name: rendered-master-1}}"})
		out := testkit.WriteTree(t, map[string]string{"rendered-master-1.yaml": "one"})
		if err := os.Mkdir(filepath.Join(dir, "machine-configs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(out, "rendered-master-1.yaml"), filepath.Join(dir, "machine-configs", "rendered-master-1.yaml")); err != nil {
			t.Fatal(err)
		}
		changed := watching(t, &Bootstrap{Dir: dir, Poll: 10 * time.Millisecond})
		testkit.Advance(time.Minute)
		if len(changed) != 0 {
			t.Fatal("an unchanged tree signalled a change")
		}
		rewrite(t, filepath.Join(out, "rendered-master-1.yaml"), "two, longer")
		if len(changed) != 1 {
			t.Fatal("an edit to the rendered config Load reads, through a link out of Dir, signalled no change")
		}
	})
}

// watching runs w's Watch until the test ends (synctest cancels t's
// context as the test function returns) and gives what it signals on.
func watching(t *testing.T, w interface {
	Watch(context.Context, chan<- struct{})
}) chan struct{} {
	changed := make(chan struct{}, 1)
	go w.Watch(t.Context(), changed)
	return changed
}

// rewrite writes data to p and lets a second of polls run.
func rewrite(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.Advance(time.Second)
}
