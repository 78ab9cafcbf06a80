package source

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/tree"
)

// Dir is a directory of MachineConfigs, pools, Butane files and a ControllerConfig.
type Dir struct {
	Path    string
	Options render.Options
	// Limits bound the bytes a load reads (per file, whole tree).
	Limits tree.Limits

	cache    render.ParseCache // parsed configs, kept from one load to the next
	renderer Renderer          // re-renders only the pools whose inputs changed
	// memo keeps each file's key by its stat, so that polls and a load's
	// checks read only what changed (see tree.Memo).
	memo tree.Memo
	// Poll is how often the tree is checked for changes (see the function
	// Poll for why polling).
	Poll time.Duration
}

func (d *Dir) String() string { return d.Path }

// Load reads and renders the tree. What it skipped (a FIFO, a device, a
// directory symlink loop) is in the Input's Warnings, even when it fails;
// so are, when it does not, the load's notices (see Notices).
func (d *Dir) Load(ctx context.Context) (*Input, error) {
	if _, err := os.Stat(d.Path); err != nil {
		return &Input{}, fmt.Errorf("source directory: %w", err) // no warnings: nothing was read
	}
	set, skipped, err := d.loadStable(ctx)
	warnings := make([]string, len(skipped))
	for i, s := range skipped {
		warnings[i] = s.Error()
	}
	if err == nil {
		// An empty tree (a mount not there yet, a wrong --dir) serves no
		// pool: it is an error, not a render that is ready with nothing.
		err = render.NothingToRender(set, d.Path)
	}
	if err != nil {
		return &Input{Warnings: warnings}, err
	}
	in := d.renderer.Render(set, d.Options, nil)
	in.Warnings = append(warnings, Notices(set)...)
	return in, nil
}

// stableTries bounds how often a load is retried while the tree keeps changing.
const stableTries = 5

// loadStable reads the tree until it reads the same before and after: a
// render must not mix files from before and after a writer's update. Same
// means the same content (see entries), so a writer that keeps a file's
// size and modification time is seen too.
func (d *Dir) loadStable(ctx context.Context) (*render.Set, []*render.Error, error) {
	var skipped []*render.Error
	var changed []string
	for range stableTries {
		Reading(ctx, d.Path)
		before := d.entries()
		l := &tree.Loader{Loader: render.Loader{Cache: &d.cache}, Limits: d.Limits, Reading: func(p string) { Reading(ctx, p) }}
		l.Path(d.Path)
		set, err := l.Set()
		skipped = l.Skipped()
		Reading(ctx, d.Path)
		after := d.entries()
		if slices.Equal(before, after) {
			return set, skipped, err
		}
		changed = changedPaths(before, after)
	}
	return nil, skipped, fmt.Errorf("%s: the directory kept changing while it was read (%d tries; last changed: %s); will retry on the next change",
		d.Path, stableTries, strings.Join(changed, ", "))
}

// changedPaths names (up to a few of) the entries that differ.
func changedPaths(before, after []tree.Entry) []string {
	was := map[tree.Entry]bool{}
	for _, e := range before {
		was[e] = true
	}
	var out []string
	for _, e := range after {
		if !was[e] && len(out) < 5 {
			out = append(out, e.Path)
		}
	}
	if len(out) == 0 {
		out = append(out, "an entry was removed")
	}
	return out
}

// Watch sends on changed whenever the tree's content key (see entries)
// changes, until ctx ends.
func (d *Dir) Watch(ctx context.Context, changed chan<- struct{}) {
	every := d.Poll
	if every <= 0 {
		every = time.Second
	}
	poll(ctx, every, d.fingerprint(), d.fingerprint, changed)
}

// fingerprint is one key of entries, as Watch keeps only that.
func (d *Dir) fingerprint() [32]byte { return tree.Sum(d.entries()) }

// entries keys every entry of the tree by its content, as a load reads it
// and within the same limits (see tree.Memo.Entries), reading only the
// files whose stat changed since the last time, after the root keyed by
// what it resolves to: a root that is a symlink (a mounted ConfigMap swaps
// one) shows a swap even between identical trees.
func (d *Dir) entries() []tree.Entry {
	root, err := filepath.EvalSymlinks(d.Path)
	out := []tree.Entry{{Path: d.Path, Key: sha256.Sum256(fmt.Appendf(nil, "root %s %v", root, err))}}
	return append(out, d.memo.Entries(d.Limits, d.Path)...)
}

// Notices are what a load found to tell a person without failing: objects
// of kinds not rendered, MachineConfigs no pool selects, fields a newer
// release's API may carry. Each names its file (or object) and JSON path.
func Notices(set *render.Set) []string {
	out := make([]string, len(set.Notices()))
	for i, n := range set.Notices() {
		out[i] = n.Error()
	}
	return out
}
