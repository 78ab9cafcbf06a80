package render

import (
	"cmp"
	"fmt"
	"path"
	"slices"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/ignition-mcs/mcs/convert"
)

// Upstream reads a spec 2 MachineConfig through removeIgnDuplicateFilesUnitsUsers
// (machine-config-operator's pkg/controller/common/helpers.go) before
// translating it to spec 3. convert folds the repeats as it does; what is
// left here is what only a MachineConfig is held to.

// spec2UserProblems: upstream reads a spec 2 config's users as the core
// user's SSH keys and refuses any other user. Spec 3 configs may declare
// other users.
func (w *writtenConfig) spec2UserProblems(v convert.Version) []convert.Problem {
	var out []convert.Problem
	for i, u := range w.Passwd.Users {
		if u.Name != "core" {
			out = append(out, convert.Problem{Path: inConfig([]any{"passwd", "users", i, "name"}),
				Message: fmt.Sprintf("user %q in a spec %s config: only the core user is supported in spec 2 configs (upstream: Only core user is supported); declare other users in a spec 3 config", u.Name, v)})
		}
	}
	return out
}

// spec2Order puts a spec 2 config's files and units (parsed, where each
// first appears) in upstream's order, which is in the rendered name: it
// walks them backwards, keeping the last entry of each, so they end up by
// where each path or name last appears, last first. Files on other
// filesystems than root, which upstream does not expect, keep their order.
func (w *writtenConfig) spec2Order(c convert.Config) convert.Config {
	lastFile := map[string]int{}
	for n, f := range w.Storage.Files {
		if f.Filesystem != "root" {
			lastFile = nil
			break
		}
		lastFile[path.Join("/", f.Path)] = n
	}
	if lastFile != nil && len(lastFile) == len(c.Storage.Files) {
		c.Storage.Files = slices.Clone(c.Storage.Files)
		slices.SortStableFunc(c.Storage.Files, func(a, b types.File) int { return cmp.Compare(lastFile[b.Path], lastFile[a.Path]) })
	}
	lastUnit := map[string]int{}
	for n, u := range w.Systemd.Units {
		lastUnit[u.Name] = n
	}
	c.Systemd.Units = slices.Clone(c.Systemd.Units)
	slices.SortStableFunc(c.Systemd.Units, func(a, b types.Unit) int { return cmp.Compare(lastUnit[b.Name], lastUnit[a.Name]) })
	return c
}
