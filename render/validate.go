package render

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
)

// Kernel types upstream knows; "" means default.
const (
	kernelTypeDefault  = "default"
	kernelTypeRealtime = "realtime"
	kernelType64kPages = "64k-pages"
)

// supportedExtensions are the RHCOS extensions upstream accepts.
var supportedExtensions = []string{"two-node-ha", "ipsec", "usbguard", "kerberos", "kernel-devel", "sandboxed-containers", "sysstat"}

// newEntry parses a MachineConfig's Ignition config and checks what upstream
// checks before merging (and what it forgets: extensions are checked even
// when the config is empty).
func newEntry(mc *MachineConfig, cache *ParseCache) *entry {
	e := &entry{mc: mc, generated: mc.Metadata.Annotations[AnnotationGeneratedByController] != ""}
	obj := KindMachineConfig + "/" + mc.Metadata.Name
	bad := func(path convert.Path, msg string, err error) {
		e.problems = append(e.problems, &Error{File: mc.Source, Object: obj, Path: path, Message: msg, Err: errors.Join(ErrInvalid, err)})
	}

	switch kt := mc.Spec.KernelType; kt {
	case "", kernelTypeDefault, kernelTypeRealtime, kernelType64kPages:
	default:
		bad(convert.NewPath("spec", "kernelType"), fmt.Sprintf("kernelType %q is invalid: want %s, %s or %s", kt, kernelTypeDefault, kernelTypeRealtime, kernelType64kPages), nil)
	}
	for i, x := range mc.Spec.Extensions {
		if !slices.Contains(supportedExtensions, x) {
			bad(convert.NewPath("spec", "extensions", i), fmt.Sprintf("extension %q is not supported: want one of %s", x, strings.Join(supportedExtensions, ", ")), nil)
		}
	}

	raw := bytes.TrimSpace(mc.Spec.Config)
	if len(raw) == 0 {
		return e
	}
	if isEmptyObject(raw) {
		// Upstream keeps only a null or absent config for "no Ignition config":
		// ValidateMachineConfig parses {} and refuses it as having no version.
		bad(convert.NewPath("spec", "config"), "config is an empty object without ignition.version (upstream: parsing Ignition config failed: invalid version); leave spec.config out for a MachineConfig without an Ignition config", nil)
		return e
	}
	if raw[0] != '{' {
		bad(convert.NewPath("spec", "config"), "config must be an Ignition config object", nil)
		return e
	}
	parsed, key := cache.parse(raw)
	e.parsed, e.parsedKey = &parsed, key
	written := parsed.written
	if written != nil {
		for _, x := range written.fileModeProblems() {
			bad(x.Path, x.Message, nil)
		}
	} else {
		written = &writtenConfig{}
	}
	p, err := parsed.p, parsed.err
	if err != nil {
		for _, x := range configErrors(err) {
			bad(x.Path, x.Message, err)
		}
		return e
	}
	e.cfg, e.written = &p.Config, p.WrittenModes
	if p.Version.Major == 2 {
		for _, x := range written.spec2UserProblems(p.Version) {
			bad(x.Path, x.Message, nil)
		}
		c := written.spec2Order(p.Config)
		e.cfg = &c
	}
	for _, w := range p.Warnings {
		e.warnings = append(e.warnings, &Error{File: mc.Source, Object: obj, Path: configPath(w.Path), Message: "warning: " + w.Message})
	}
	return e
}

// writtenConfig is what some checks read from a config as written, before
// parsing changes it: parsing a spec before 3.6 masks special mode bits, and
// parsing spec 2 folds repeated files, units and users into one entry each.
type writtenConfig struct {
	Storage struct {
		Files []struct {
			Filesystem string // spec 2
			Path       string
			Mode       *int
		}
	}
	Systemd struct {
		Units []struct{ Name string }
	}
	Passwd struct {
		Users []struct{ Name string }
	}
}

// fileModeProblems: upstream refuses special bits on files, as written
// (validateIgn3FileModes and validateIgn2FileModes in
// pkg/controller/common/helpers.go); directories it leaves alone.
func (w *writtenConfig) fileModeProblems() []convert.Problem {
	var out []convert.Problem
	for i, f := range w.Storage.Files {
		if f.Mode != nil && (*f.Mode > 0o777 || *f.Mode < 0) {
			out = append(out, convert.Problem{Path: inConfig([]any{"storage", "files", i, "mode"}),
				Message: fmt.Sprintf("mode %#o of %s has bits above 0777 (setuid, setgid or sticky): MachineConfigs may not set them on files", *f.Mode, f.Path)})
		}
	}
	return out
}

func isEmptyObject(b []byte) bool {
	return len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}' && len(bytes.TrimSpace(b[1:len(b)-1])) == 0
}

// configErrors locates convert's errors inside the MachineConfig.
func configErrors(err error) []convert.Problem {
	var inv *convert.InvalidError
	var uv *convert.UnsupportedVersionError
	var se *convert.SyntaxError
	switch {
	case errors.As(err, &inv):
		out := make([]convert.Problem, len(inv.Problems))
		for i, p := range inv.Problems {
			out[i] = convert.Problem{Path: configPath(p.Path), Message: p.Message}
		}
		if len(out) == 0 {
			out = []convert.Problem{{Path: convert.NewPath("spec", "config"), Message: err.Error()}}
		}
		return out
	case errors.As(err, &uv):
		return []convert.Problem{{Path: convert.NewPath("spec", "config", "ignition", "version"), Message: uv.Error()}}
	case errors.As(err, &se):
		return []convert.Problem{{Path: convert.NewPath("spec", "config"), Message: se.Error()}}
	}
	return []convert.Problem{{Path: convert.NewPath("spec", "config"), Message: err.Error()}}
}

// inConfig is p, a path in a MachineConfig's Ignition config, as a path in
// the MachineConfig.
func inConfig(p []any) convert.Path { return convert.NewPath("spec", "config").Append(p...) }

// configPath is inConfig for a problem's path (none: the whole config).
func configPath(p convert.Path) convert.Path { return inConfig(p.Path) }
