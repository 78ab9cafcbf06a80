package convert

import (
	"encoding/json"
	"reflect"
	"slices"

	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
)

// WrittenModes maps a file's or directory's path to its mode as a config
// of a spec before 3.6 wrote it, setuid, setgid or sticky bits included.
// Those specs parse the bits and ignore them (Ignition warns), so the
// internal config holds the mode without them and MinVersion asks no newer
// spec for them. Translated to a spec before 3.6, the mode is written back
// as written: forcing a spec must not change what that spec can carry, and
// a reader of such a spec (OpenShift's machine-config-operator, at 3.5)
// reads the mode as written: it refuses a file's special bits, and writes
// a directory's unchanged. Files and directories share one space of paths
// (Ignition refuses a path used twice).
type WrittenModes map[string]int

// keepWrittenModes records in p which of raw's file and directory modes
// parsing masked, read from what Ignition's parser decoded of raw where p
// holds it (spec 3), else from raw. The internal config's files and directories are raw's,
// in raw's order (no step up folds or reorders them), so they pair by
// index; a pair whose modes do not agree without the special bits is left
// out.
func (p *Parsed) keepWrittenModes(raw []byte) {
	st := &p.Config.Storage
	if !p.Version.Less(V3_6) || len(st.Directories) == 0 && len(st.Files) == 0 {
		return
	}
	type node struct {
		Mode *int
	}
	var w struct {
		Storage struct{ Directories, Files []node }
	}
	if p.declared != nil {
		// What Ignition's parser decoded: the modes as raw writes them.
		st := reflect.ValueOf(p.declared).FieldByName("Storage")
		for _, l := range []struct {
			name string
			to   *[]node
		}{{"Directories", &w.Storage.Directories}, {"Files", &w.Storage.Files}} {
			list := st.FieldByName(l.name)
			*l.to = make([]node, list.Len())
			for i := range list.Len() {
				(*l.to)[i].Mode, _ = list.Index(i).FieldByName("Mode").Interface().(*int)
			}
		}
	} else if json.Unmarshal(raw, &w) != nil {
		return
	}
	keep := func(n node, path string, mode *int) {
		if n.Mode == nil || *n.Mode&0o7000 == 0 || mode == nil || *mode != *n.Mode&^0o7000 {
			return
		}
		if p.WrittenModes == nil {
			p.WrittenModes = WrittenModes{}
		}
		p.WrittenModes[path] = *n.Mode
	}
	for i, d := range w.Storage.Directories {
		if i < len(st.Directories) {
			keep(d, st.Directories[i].Path, st.Directories[i].Mode)
		}
	}
	for i, f := range w.Storage.Files {
		if i < len(st.Files) {
			keep(f, st.Files[i].Path, st.Files[i].Mode)
		}
	}
}

// apply35 puts the written modes back into a config translated to 3.5,
// where the file or directory still has the mode they mask to: a config
// merged later over it may have changed the mode.
func (w WrittenModes) apply35(c t35.Config) t35.Config {
	if len(w) == 0 {
		return c
	}
	c.Storage.Directories = slices.Clone(c.Storage.Directories)
	for i, d := range c.Storage.Directories {
		if m, ok := w[d.Path]; ok && d.Mode != nil && *d.Mode == m&^0o7000 {
			c.Storage.Directories[i].Mode = &m
		}
	}
	c.Storage.Files = slices.Clone(c.Storage.Files)
	for i, f := range c.Storage.Files {
		if m, ok := w[f.Path]; ok && f.Mode != nil && *f.Mode == m&^0o7000 {
			c.Storage.Files[i].Mode = &m
		}
	}
	return c
}
