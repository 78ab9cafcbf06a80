package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/tree"
)

// bootstrapPools are the pools OpenShift's bootstrap server serves: the
// control plane's, the only nodes that boot from it; it refuses the rest.
var bootstrapPools = []string{"master", "arbiter"}

// Bootstrap is the installer's bootstrap manifests, read as OpenShift's
// bootstrap server reads them (machine-config-server bootstrap
// --server-basedir DIR): machine-pools/<pool>.yaml names in
// status.configuration.name the rendered MachineConfig in
// machine-configs/<name>.yaml, served as rendered (re-encoded at the lowest
// spec), with controller-config/machine-config-controller.yaml.
type Bootstrap struct {
	Dir     string
	Options render.Options
	// Poll is how often the files are checked for changes.
	Poll time.Duration
}

func (b *Bootstrap) String() string { return "bootstrap " + b.Dir }

// Load reads the served pools that have a pool file; the others stay
// unknown (500, which a node retries). A pool whose rendered config is
// missing or bad fails alone.
func (b *Bootstrap) Load(ctx context.Context) (*Input, error) {
	ccFile := filepath.Join(b.Dir, "controller-config", "machine-config-controller.yaml")
	Reading(ctx, ccFile)
	var l tree.Loader
	l.Path(ccFile)
	set, err := l.Set()
	if err != nil {
		return nil, fmt.Errorf("bootstrap: the ControllerConfig, which OpenShift's bootstrap server needs for every pool: %w", err)
	}
	in := &Input{ControllerConfig: set.ControllerConfig()}
	for _, pool := range bootstrapPools {
		poolFile := filepath.Join(b.Dir, "machine-pools", pool+".yaml")
		Reading(ctx, poolFile)
		res, err := b.pool(pool, poolFile)
		switch {
		case errors.Is(err, os.ErrNotExist) && res == nil:
			continue
		case err != nil:
			if in.Failed == nil {
				in.Failed = map[string]error{}
			}
			in.Failed[pool] = err
		default:
			in.Results = append(in.Results, res)
		}
	}
	return in, nil
}

// pool reads one pool file and the rendered config it names; a missing
// pool file is os.ErrNotExist with no result.
func (b *Bootstrap) pool(pool, poolFile string) (*render.Result, error) {
	data, err := os.ReadFile(poolFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	var p struct {
		Status struct {
			Configuration struct{ Name string } `json:"configuration"`
		} `json:"status"`
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		return nil, &render.Error{File: poolFile, Object: render.KindMachineConfigPool + "/" + pool, Message: err.Error(), Err: render.ErrInvalid}
	}
	name := p.Status.Configuration.Name
	if name == "" || strings.ContainsAny(name, `/\`) {
		return nil, &render.Error{File: poolFile, Object: render.KindMachineConfigPool + "/" + pool, Path: convert.NewPath("status", "configuration", "name"),
			Message: fmt.Sprintf("want the name of a rendered MachineConfig in machine-configs/, got %q", name), Err: render.ErrNoConfigs}
	}
	var l tree.Loader
	l.Path(filepath.Join(b.Dir, "machine-configs", name+".yaml"))
	set, err := l.Set()
	if err != nil {
		return &render.Result{}, err // not ErrNotExist's no-pool case: the pool exists
	}
	mcs := set.MachineConfigs()
	if len(mcs) != 1 || mcs[0].Metadata.Name != name {
		return &render.Result{}, fmt.Errorf("bootstrap: machine-configs/%s.yaml: want MachineConfig %s alone", name, name)
	}
	return render.FromRendered(pool, mcs[0], nil, b.Options)
}

// Watch signals a change when an entry of the tree Dir changes (a file's
// bytes, an entry's presence, where a link leading out of it points) or
// when a file Load opens does, checked every Poll. The tree is keyed as
// tree.Memo.Entries keys one: a link leading out of Dir is keyed by its
// target, never entered or read, so a link to / costs no walk of the file
// system each poll. Load opens its files by path, following links anywhere,
// so those few files (see loadFiles) are keyed by their bytes too, every
// link followed: an edit to a rendered config linked from outside Dir is
// served by the next load, so it must signal one.
func (b *Bootstrap) Watch(ctx context.Context, changed chan<- struct{}) {
	var dir, files tree.Memo
	stamp := func() [32]byte {
		return tree.Sum([]tree.Entry{
			{Path: b.Dir, Key: tree.Sum(dir.Entries(tree.Limits{}, b.Dir))},
			{Path: "load", Key: files.Digest(tree.Limits{}, b.loadFiles()...)},
		})
	}
	poll(ctx, max(b.Poll, 100*time.Millisecond), stamp(), stamp, changed)
}

// loadFiles are the files Load may open: the ControllerConfig, the pool
// files and every machine-configs/*.yaml one level deep (whichever a pool
// file names), links followed as Load follows them. A directory among them
// is left out (Load reads no directory it can be told to), so a link to /
// is never walked.
func (b *Bootstrap) loadFiles() []string {
	named := []string{filepath.Join(b.Dir, "controller-config", "machine-config-controller.yaml")}
	for _, pool := range bootstrapPools {
		named = append(named, filepath.Join(b.Dir, "machine-pools", pool+".yaml"))
	}
	mcDir := filepath.Join(b.Dir, "machine-configs")
	entries, _ := os.ReadDir(mcDir) // absent or unreadable: Load fails alike, and the tree's key says so
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			named = append(named, filepath.Join(mcDir, e.Name()))
		}
	}
	files := named[:0]
	for _, p := range named {
		if info, err := os.Stat(p); err != nil || !info.IsDir() {
			files = append(files, p)
		}
	}
	return files
}
