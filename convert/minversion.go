package convert

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/ignition-mcs/mcs/internal/text"
)

// Reason is one field or value that needs a spec newer than 3.0.0.
type Reason struct {
	Path    Path    `json:"path"`    // JSON path, e.g. "$.kernelArguments.shouldExist"
	What    string  `json:"what"`    // e.g. "kernel arguments"
	Version Version `json:"version"` // the spec that introduced it
}

func (r Reason) String() string {
	return fmt.Sprintf("%s: %s need%s spec %s", r.Path, r.What, text.VerbS(r.What), r.Version)
}

// minVersion returns the lowest spec able to express cfg and, for every field
// or value that forces a spec above 3.0.0, why. Reasons are sorted by path.
func minVersion(cfg *types.Config) (Version, []Reason) {
	f := finder{}
	f.config(cfg)
	sort.SliceStable(f.reasons, func(i, j int) bool { return f.reasons[i].Path.String() < f.reasons[j].Path.String() })
	v := V3_0
	for _, r := range f.reasons {
		if v.Less(r.Version) {
			v = r.Version
		}
	}
	return v, f.reasons
}

// ReasonsAbove filters reasons to those a target spec cannot hold.
func ReasonsAbove(reasons []Reason, target Version) []Reason {
	level := featureLevel(target)
	var out []Reason
	for _, r := range reasons {
		if level.Less(r.Version) {
			out = append(out, r)
		}
	}
	return out
}

type finder struct{ reasons []Reason }

func (f *finder) add(v Version, what string, p Path) {
	f.reasons = append(f.reasons, Reason{Path: p, What: what, Version: v})
}

func (f *finder) config(c *types.Config) {
	ign := &c.Ignition
	for i := range ign.Config.Merge {
		f.resource(&ign.Config.Merge[i], true, NewPath("ignition", "config", "merge", i))
	}
	f.resource(&ign.Config.Replace, true, NewPath("ignition", "config", "replace"))
	for i := range ign.Security.TLS.CertificateAuthorities {
		f.resource(&ign.Security.TLS.CertificateAuthorities[i], true, NewPath("ignition", "security", "tls", "certificateAuthorities", i))
	}
	if p := ign.Proxy; p.HTTPProxy != nil || p.HTTPSProxy != nil || len(p.NoProxy) > 0 {
		f.add(V3_1, "HTTP proxy settings", NewPath("ignition", "proxy"))
	}

	if len(c.KernelArguments.ShouldExist) > 0 {
		f.add(V3_3, "kernel arguments", NewPath("kernelArguments", "shouldExist"))
	}
	if len(c.KernelArguments.ShouldNotExist) > 0 {
		f.add(V3_3, "kernel arguments", NewPath("kernelArguments", "shouldNotExist"))
	}

	for i, u := range c.Passwd.Users {
		if u.ShouldExist != nil {
			f.add(V3_2, "user shouldExist", NewPath("passwd", "users", i, "shouldExist"))
		}
	}
	for i, g := range c.Passwd.Groups {
		if g.ShouldExist != nil {
			f.add(V3_2, "group shouldExist", NewPath("passwd", "groups", i, "shouldExist"))
		}
	}

	s := &c.Storage
	for i, d := range s.Disks {
		for j, p := range d.Partitions {
			if p.Resize != nil {
				f.add(V3_2, "partition resize", NewPath("storage", "disks", i, "partitions", j, "resize"))
			}
		}
	}
	for i, fs := range s.Filesystems {
		if len(fs.MountOptions) > 0 {
			f.add(V3_1, "filesystem mount options", NewPath("storage", "filesystems", i, "mountOptions"))
		}
		if fs.Format != nil && *fs.Format == "none" {
			f.add(V3_3, `filesystem format "none"`, NewPath("storage", "filesystems", i, "format"))
		}
	}
	for i := range s.Files {
		file := &s.Files[i]
		f.resource(&file.Contents, false, NewPath("storage", "files", i, "contents"))
		for j := range file.Append {
			f.resource(&file.Append[j], false, NewPath("storage", "files", i, "append", j))
		}
		f.mode(file.Mode, NewPath("storage", "files", i, "mode"))
	}
	for i, d := range s.Directories {
		f.mode(d.Mode, NewPath("storage", "directories", i, "mode"))
	}
	for i := range s.Luks {
		f.luks(&s.Luks[i], i)
	}
}

// spec2Blockers lists what spec 2.2 cannot hold although spec 3.0 can:
// ign-converter's v32tov22 drops it without a word or fails on it untyped.
func spec2Blockers(c *types.Config) []Reason {
	var out []Reason
	add := func(what string, p Path) {
		out = append(out, Reason{Path: p, What: what + " (spec 2.2 cannot express it)", Version: V3_0})
	}
	for i, d := range c.Storage.Disks {
		for j, p := range d.Partitions {
			if p.SizeMiB != nil || p.StartMiB != nil {
				add("partition sizes in MiB (spec 2 counts sectors)", NewPath("storage", "disks", i, "partitions", j))
			}
			if p.ShouldExist != nil {
				add("partition shouldExist", NewPath("storage", "disks", i, "partitions", j, "shouldExist"))
			}
			if p.WipePartitionEntry != nil {
				add("partition wipePartitionEntry", NewPath("storage", "disks", i, "partitions", j, "wipePartitionEntry"))
			}
		}
	}
	for i, fs := range c.Storage.Filesystems {
		if fs.Format == nil || *fs.Format == "" {
			add("a filesystem without a format", NewPath("storage", "filesystems", i, "format"))
		}
	}
	for i, f := range c.Storage.Files {
		if f.Contents.Source == nil && len(f.Append) == 0 {
			add("a file without contents", NewPath("storage", "files", i, "contents"))
		}
	}
	return out
}

// resource checks the fields and URL schemes of anything Ignition fetches.
// headersAndCompressionNew is true where 3.1 added compression too (config
// references and CAs; file contents had compression from 3.0).
func (f *finder) resource(r *types.Resource, headersAndCompressionNew bool, p Path) {
	if len(r.HTTPHeaders) > 0 {
		f.add(V3_1, "HTTP headers", p.Append("httpHeaders"))
	}
	if headersAndCompressionNew && r.Compression != nil {
		f.add(V3_1, "compression of configs and CAs", p.Append("compression"))
	}
	if r.Verification.Hash != nil && strings.HasPrefix(*r.Verification.Hash, "sha256-") {
		f.add(V3_1, "sha256 hashes", p.Append("verification", "hash"))
	}
	if r.Source != nil {
		// Ignition reads the scheme as net/url does: case-insensitively.
		if u, err := url.Parse(*r.Source); err == nil {
			switch u.Scheme {
			case "gs":
				f.add(V3_2, "gs:// URLs", p.Append("source"))
			case "arn":
				f.add(V3_4, "arn: S3 URLs", p.Append("source"))
			}
		}
	}
}

func (f *finder) mode(m *int, p Path) {
	if m != nil && *m&07000 != 0 {
		f.add(V3_6, "setuid/setgid/sticky mode bits", p)
	}
}

func (f *finder) luks(l *types.Luks, i int) {
	f.add(V3_2, "LUKS volumes", NewPath("storage", "luks", i))
	f.resource(&l.KeyFile, false, NewPath("storage", "luks", i, "keyFile"))
	if l.Discard != nil {
		f.add(V3_4, "LUKS discard", NewPath("storage", "luks", i, "discard"))
	}
	if len(l.OpenOptions) > 0 {
		f.add(V3_4, "LUKS open options", NewPath("storage", "luks", i, "openOptions"))
	}
	for j, t := range l.Clevis.Tang {
		if t.Advertisement != nil {
			f.add(V3_4, "Tang advertisements", NewPath("storage", "luks", i, "clevis", "tang", j, "advertisement"))
		}
	}
	// Until 3.6 Ignition refused custom pins other than these three.
	if pin := l.Clevis.Custom.Pin; pin != nil && *pin != "" && *pin != "tpm2" && *pin != "tang" && *pin != "sss" {
		f.add(V3_6, "custom Clevis pins other than tpm2, tang and sss", NewPath("storage", "luks", i, "clevis", "custom", "pin"))
	}
	if l.Cex.Enabled != nil {
		f.add(V3_5, "LUKS CEX", NewPath("storage", "luks", i, "cex", "enabled"))
	}
}
