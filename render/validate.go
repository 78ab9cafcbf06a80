package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
)

// Kernel types upstream knows; "" means default.
const (
	KernelTypeDefault  = "default"
	KernelTypeRealtime = "realtime"
	KernelType64kPages = "64k-pages"
)

// SupportedExtensions are the RHCOS extensions upstream accepts.
var SupportedExtensions = []string{"two-node-ha", "ipsec", "usbguard", "kerberos", "kernel-devel", "sandboxed-containers", "sysstat"}

// MaxRenderedSize is upstream's limit on a rendered MachineConfig, in bytes
// of JSON: 1.5 MiB, what etcd stores in one object.
const MaxRenderedSize = 1572864

// newEntry parses a MachineConfig's Ignition config and checks what upstream
// checks before merging (and what it forgets: extensions are checked even
// when the config is empty).
func newEntry(mc *MachineConfig, cache *ParseCache) *entry {
	e := &entry{mc: mc, generated: mc.Metadata.Annotations[AnnotationGeneratedByController] != ""}
	obj := KindMachineConfig + "/" + mc.Metadata.Name
	bad := func(path, msg string, err error) {
		e.problems = append(e.problems, &Error{File: mc.Source, Object: obj, Path: path, Message: msg, Err: errors.Join(ErrInvalid, err)})
	}

	switch kt := mc.Spec.KernelType; kt {
	case "", KernelTypeDefault, KernelTypeRealtime, KernelType64kPages:
	default:
		bad("$.spec.kernelType", fmt.Sprintf("kernelType %q is invalid: want %s, %s or %s", kt, KernelTypeDefault, KernelTypeRealtime, KernelType64kPages), nil)
	}
	for i, x := range mc.Spec.Extensions {
		if !contains(SupportedExtensions, x) {
			bad(fmt.Sprintf("$.spec.extensions.%d", i), fmt.Sprintf("extension %q is not supported: want one of %s", x, strings.Join(SupportedExtensions, ", ")), nil)
		}
	}

	raw := bytes.TrimSpace(mc.Spec.Config)
	if len(raw) == 0 || isEmptyObject(raw) {
		return e
	}
	if raw[0] != '{' {
		bad("$.spec.config", "config must be an Ignition config object", nil)
		return e
	}
	// Upstream refuses special bits on files, as written (parsing a spec
	// older than 3.6 would mask them first); directories it leaves alone,
	// and spec 3.6 honours their bits, so those raise the spec instead.
	var modes struct {
		Storage struct {
			Files []struct {
				Path string
				Mode *int
			}
		}
	}
	if json.Unmarshal(raw, &modes) == nil {
		for i, f := range modes.Storage.Files {
			if f.Mode != nil && (*f.Mode > 0o777 || *f.Mode < 0) {
				bad(fmt.Sprintf("$.spec.config.storage.files.%d.mode", i),
					fmt.Sprintf("mode %#o of %s has bits above 0777 (setuid, setgid or sticky): MachineConfigs may not set them on files", *f.Mode, f.Path), nil)
			}
		}
	}
	p, err := cache.parse(raw)
	if err != nil {
		for _, x := range configErrors(err) {
			bad(x.Path, x.Message, err)
		}
		return e
	}
	e.cfg = &p.Config
	for _, w := range p.Warnings {
		e.warnings = append(e.warnings, &Error{File: mc.Source, Object: obj, Path: configPath(w.Path), Message: "warning: " + w.Message})
	}
	return e
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
			out = []convert.Problem{{Path: "$.spec.config", Message: err.Error()}}
		}
		return out
	case errors.As(err, &uv):
		return []convert.Problem{{Path: "$.spec.config.ignition.version", Message: uv.Error()}}
	case errors.As(err, &se):
		return []convert.Problem{{Path: "$.spec.config", Message: se.Error()}}
	}
	return []convert.Problem{{Path: "$.spec.config", Message: err.Error()}}
}

// configPath turns a path inside an Ignition config into one inside the
// MachineConfig holding it.
func configPath(p string) string {
	if p == "" || p == "$" {
		return "$.spec.config"
	}
	return "$.spec.config" + strings.TrimPrefix(p, "$")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
