package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const mc = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: NAME
  labels: {machineconfiguration.openshift.io/role: ROLE}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - {path: /etc/NAME, contents: {source: "data:,x"}}
`

func write(t *testing.T, dir, name, role string) {
	t.Helper()
	body := strings.NewReplacer("NAME", name, "ROLE", role).Replace(mc)
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
	bad := strings.NewReplacer("NAME", "60-master", "ROLE", "master").Replace(mc) + "  kernelType: turbo\n"
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
	d := &Dir{Path: link, Poll: 5 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := make(chan struct{}, 1)
	go d.Watch(ctx, changed)
	expect := func(what string, want bool) {
		t.Helper()
		select {
		case <-changed:
			if !want {
				t.Fatalf("%s: change signalled", what)
			}
		case <-time.After(100 * time.Millisecond):
			if want {
				t.Fatalf("%s: no change signalled", what)
			}
		}
	}
	expect("nothing", false)
	write(t, real, "60-worker", "worker")
	expect("a new file behind a symlinked root", true)
	// A ConfigMap-style swap: a new directory, the link replaced by rename.
	v2 := filepath.Join(parent, "v2")
	os.Mkdir(v2, 0o755)
	write(t, v2, "50-worker", "worker")
	os.Symlink(v2, link+".tmp")
	os.Rename(link+".tmp", link)
	expect("the link swapped", true)
	os.RemoveAll(v2)
	expect("the target removed", true)
}
