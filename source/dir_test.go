package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

func write(t *testing.T, dir, name, role string) {
	t.Helper()
	body := mctest.MachineConfig(name, role, "x")
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSplitsFailuresByPool(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "50-worker", "worker")
	write(t, dir, "50-master", "master")
	d := &Dir{Path: dir}
	in, err := d.Load(context.Background())
	if err != nil || len(in.Results) != 2 || len(in.Failed) != 0 {
		t.Fatalf("%v %+v", err, in)
	}
	// A master-only problem fails master alone.
	bad := mctest.Config{Name: "60-master", Role: "master", Spec: map[string]any{"kernelType": "turbo"}}.YAML()
	os.WriteFile(filepath.Join(dir, "60-master.yaml"), []byte(bad), 0o644)
	in, err = d.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Results) != 1 || in.Results[0].Pool != "worker" || in.Failed["master"] == nil {
		t.Fatalf("results %d, failed %v", len(in.Results), in.Failed)
	}
	if !strings.Contains(in.Failed["master"].Error(), "60-master") {
		t.Fatalf("error does not name the MachineConfig: %v", in.Failed["master"])
	}
}

func TestLoadMissingDir(t *testing.T) {
	_, err := (&Dir{Path: filepath.Join(t.TempDir(), "gone")}).Load(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Fatalf("err %v", err)
	}
}

// Watch sees a file added behind a symlinked root, the root swapped to an
// identical tree (same names, bytes and modification times: only where the
// root leads differs, as when a mounted ConfigMap's link is replaced), and
// the new target removed; an unchanged tree signals nothing.
func TestWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent := t.TempDir()
		real := filepath.Join(parent, "v1")
		os.Mkdir(real, 0o755)
		write(t, real, "50-worker", "worker")
		link := filepath.Join(parent, "current")
		os.Symlink(real, link)
		d := &Dir{Path: link, Poll: 5 * time.Millisecond}
		changed := watching(t, d)
		expect := func(what string, n int) {
			t.Helper()
			testkit.Advance(time.Second)
			if len(changed) != n {
				t.Fatalf("%s: %d changes signalled, want %d", what, len(changed), n)
			}
			if n > 0 {
				<-changed
			}
		}
		expect("an unchanged tree", 0)
		write(t, real, "60-worker", "worker")
		expect("a new file behind a symlinked root", 1)
		v2 := filepath.Join(parent, "v2")
		if err := os.CopyFS(v2, os.DirFS(real)); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"50-worker.yaml", "60-worker.yaml"} {
			info, _ := os.Stat(filepath.Join(real, name))
			os.Chtimes(filepath.Join(v2, name), info.ModTime(), info.ModTime())
		}
		os.Symlink(v2, link+".tmp")
		os.Rename(link+".tmp", link)
		expect("the link swapped to an identical tree", 1)
		os.RemoveAll(v2)
		expect("the target removed", 1)
	})
}

// A writer's edit during a load (same size, its modification time set
// back) is seen: the load is read again, and one torn on every try fails
// naming the file that kept changing.
func TestLoadRereadsTornTree(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits int
		loads int
	}{
		{"torn once", 1, 2},
		{"torn every time", stableTries, stableTries},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "50-worker", "worker")
			write(t, dir, "60-worker", "worker")
			p := filepath.Join(dir, "60-worker.yaml")
			before, _ := os.Stat(p)
			loads, edits := 0, 0
			ctx := WithProgress(t.Context(), progressFunc(func(what string) {
				if filepath.Base(what) != "50-worker.yaml" {
					return
				}
				loads++
				if edits < c.edits {
					edits++
					os.WriteFile(p, []byte(mctest.MachineConfig("60-worker", "worker", strconv.Itoa(edits%2))), 0o644)
					os.Chtimes(p, before.ModTime(), before.ModTime())
				}
			}))
			_, err := (&Dir{Path: dir}).Load(ctx)
			if after, _ := os.Stat(p); after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
				t.Fatalf("the edit changed size or mtime: %v %v → %v %v", before.Size(), before.ModTime(), after.Size(), after.ModTime())
			}
			if loads != c.loads {
				t.Errorf("%d loads, want %d", loads, c.loads)
			}
			if c.edits < stableTries {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := fmt.Sprintf("kept changing while it was read (%d tries; last changed: %s)", stableTries, p); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want it to contain %q", err, want)
			}
		})
	}
}

// progressFunc is a Progress.
type progressFunc func(what string)

func (f progressFunc) Reading(what string) { f(what) }

// An empty tree (a mount not there yet, a wrong --dir) is an error naming
// it, not a render of no pool that reports itself ready.
func TestLoadEmptyDir(t *testing.T) {
	dir := t.TempDir()
	d := &Dir{Path: dir}
	in, err := d.Load(context.Background())
	if err == nil || !strings.Contains(err.Error(), "nothing to render in "+dir) {
		t.Fatalf("empty directory: %v, %d results", err, len(in.Results))
	}
}
