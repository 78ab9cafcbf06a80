package convert

import (
	"encoding/json"
	"slices"

	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
)

// WrittenModes maps a directory's path to its mode as a config of a spec
// before 3.6 wrote it, setuid, setgid or sticky bits included. Those specs
// parse the bits and ignore them (Ignition warns), so the internal config
// holds the mode without them and MinVersion asks no newer spec for them.
// Translated to a spec before 3.6, the mode is written back as written:
// forcing a spec must not change what that spec can carry, and OpenShift's
// renderer, which keeps configs at 3.5, writes such modes unchanged.
// Files need nothing of the kind: MachineConfigs may not set those bits on
// files.
type WrittenModes map[string]int

// keepWrittenModes records in p which of raw's directory modes parsing
// masked. The internal config's directories are raw's, in raw's order (no
// step up folds or reorders them), so they pair by index; a pair whose
// modes do not agree without the special bits is left out.
func (p *Parsed) keepWrittenModes(raw []byte) {
	if !p.Version.Less(V3_6) || len(p.Config.Storage.Directories) == 0 {
		return
	}
	var w struct {
		Storage struct {
			Directories []struct{ Mode *int }
		}
	}
	if json.Unmarshal(raw, &w) != nil {
		return
	}
	dirs := p.Config.Storage.Directories
	for i, d := range w.Storage.Directories {
		if d.Mode == nil || *d.Mode&0o7000 == 0 || i >= len(dirs) || dirs[i].Mode == nil || *dirs[i].Mode != *d.Mode&^0o7000 {
			continue
		}
		if p.WrittenModes == nil {
			p.WrittenModes = WrittenModes{}
		}
		p.WrittenModes[dirs[i].Path] = *d.Mode
	}
}

// apply35 puts the written modes back into a config translated to 3.5,
// where the directory still has the mode they mask to: a config merged
// later over it may have changed the mode.
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
	return c
}
