package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/mctest"
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

func TestWatch(t *testing.T) {
	parent := t.TempDir()
	real := filepath.Join(parent, "v1")
	os.Mkdir(real, 0o755)
	write(t, real, "50-worker", "worker")
	link := filepath.Join(parent, "current")
	os.Symlink(real, link)
	watching := make(chan struct{})
	d := &Dir{Path: link, Poll: 5 * time.Millisecond, watching: func() { close(watching) }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := make(chan struct{}, 1)
	go d.Watch(ctx, changed)
	<-watching // changes from here on are signalled
	// Watch signals when the fingerprint changes: unchanged, it is stable.
	if a, b := d.fingerprint(), d.fingerprint(); a != b {
		t.Fatal("the fingerprint of an unchanged tree changes")
	}
	expect := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no change signalled", what)
		}
	}
	write(t, real, "60-worker", "worker")
	expect("a new file behind a symlinked root")
	// A ConfigMap-style swap: a new directory, the link replaced by rename.
	v2 := filepath.Join(parent, "v2")
	os.Mkdir(v2, 0o755)
	write(t, v2, "50-worker", "worker")
	os.Symlink(v2, link+".tmp")
	os.Rename(link+".tmp", link)
	expect("the link swapped")
	os.RemoveAll(v2)
	expect("the target removed")
}

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
