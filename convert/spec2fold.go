package convert

import (
	"fmt"
	"path"
	"slices"
	"strings"

	v24tov31 "github.com/coreos/ign-converter/translate/v24tov31"
	ign2types "github.com/coreos/ignition/config/v2_4/types"
	t31 "github.com/coreos/ignition/v2/config/v3_1/types"
)

// spec2To3 translates spec 2.4 types to the newest spec. Spec 2 allows
// repeated files, units and users, applied in order on the node; spec 3
// does not, so they are folded into one entry each.
func spec2To3(cfg ign2types.Config) (Config, error) {
	fsMap := spec2Filesystems(cfg)
	if err := spec2Partitions(&cfg); err != nil {
		return Config{}, err
	}
	files, appends := foldSpec2Files(cfg.Storage.Files, fsMap)
	cfg.Storage.Files = files
	cfg.Systemd.Units = foldSpec2Units(cfg.Systemd.Units)
	cfg.Passwd.Users = foldSpec2Users(cfg.Passwd.Users)
	// v24tov31 points every merged config and CA at its loop variable's
	// source (its module predates Go 1.22's loop variables), so all of them
	// get the last one's: they are translated here instead.
	merges, cas := cfg.Ignition.Config.Append, cfg.Ignition.Security.TLS.CertificateAuthorities
	cfg.Ignition.Config.Append, cfg.Ignition.Security.TLS.CertificateAuthorities = nil, nil
	c31, err := v24tov31.Translate(cfg, fsMap)
	if err != nil {
		return Config{}, fmt.Errorf("translating spec 2 to 3.1.0: %w", err)
	}
	for _, m := range merges {
		c31.Ignition.Config.Merge = append(c31.Ignition.Config.Merge, spec2Reference(m.Source, m.Verification.Hash, m.HTTPHeaders))
	}
	for _, ca := range cas {
		c31.Ignition.Security.TLS.CertificateAuthorities = append(c31.Ignition.Security.TLS.CertificateAuthorities, spec2Reference(ca.Source, ca.Verification.Hash, ca.HTTPHeaders))
	}
	for i, later := range appends {
		spec2Appends(&c31.Storage.Files[i], later)
	}
	return upFrom(V3_1, c31)
}

// spec2Filesystems maps spec 2's filesystem names to paths: "root" is "/",
// and a filesystem with a path (or one named by its mount point, as spec-2
// output of translate names them) maps there.
func spec2Filesystems(cfg ign2types.Config) map[string]string {
	fsMap := map[string]string{"root": "/"}
	used := map[string]bool{}
	for _, f := range cfg.Storage.Files {
		used[f.Filesystem] = true
	}
	for _, d := range cfg.Storage.Directories {
		used[d.Filesystem] = true
	}
	for _, l := range cfg.Storage.Links {
		used[l.Filesystem] = true
	}
	for _, fs := range cfg.Storage.Filesystems {
		switch {
		case fs.Path != nil:
			fsMap[fs.Name] = *fs.Path
		case strings.HasPrefix(fs.Name, "/"):
			fsMap[fs.Name] = fs.Name
		case !used[fs.Name]:
			// Formatted but never written to: spec 3 leaves its path unset.
			fsMap[fs.Name] = ""
		}
	}
	return fsMap
}

// spec2Partitions drops partition sizes and starts of 0. Spec 2.0–2.2 count
// them in sectors of the disk's logical size, which spec 3 cannot express;
// 0 means "the default" in both. Spec 2.3 and 2.4 deprecated them, and
// v24tov31 refuses them.
func spec2Partitions(cfg *ign2types.Config) error {
	cfg.Storage.Disks = slices.Clone(cfg.Storage.Disks)
	for i, d := range cfg.Storage.Disks {
		parts := slices.Clone(d.Partitions)
		for j := range parts {
			for _, f := range []struct {
				name string
				v    **int
			}{{"size", &parts[j].Size}, {"start", &parts[j].Start}} {
				switch {
				case *f.v == nil:
				case **f.v == 0:
					*f.v = nil
				default:
					// Worded as a report, so that reportProblems finds the path.
					return fmt.Errorf("error at $.storage.disks.%d.partitions.%d.%s: %d sectors: spec 3 counts MiB, and the sector size is the disk's", i, j, f.name, **f.v)
				}
			}
		}
		cfg.Storage.Disks[i].Partitions = parts
	}
	return nil
}

func spec2Reference(source string, hash *string, hs ign2types.HTTPHeaders) t31.Resource {
	return t31.Resource{Source: new(source), Verification: t31.Verification{Hash: hash}, HTTPHeaders: spec2Headers(hs)}
}

// spec2Appends adds to f the appends that followed it. Each sets the file's
// mode and owner when it names them.
func spec2Appends(f *t31.File, later []ign2types.File) {
	for _, a := range later {
		f.Append = append(f.Append, t31.Resource{
			Compression:  strPtr(a.Contents.Compression),
			Source:       &a.Contents.Source,
			HTTPHeaders:  spec2Headers(a.Contents.HTTPHeaders),
			Verification: t31.Verification{Hash: a.Contents.Verification.Hash},
		})
		if a.Mode != nil {
			f.Mode = a.Mode
		}
		if a.User != nil {
			f.User = t31.NodeUser{ID: a.User.ID, Name: strPtr(a.User.Name)}
		}
		if a.Group != nil {
			f.Group = t31.NodeGroup{ID: a.Group.ID, Name: strPtr(a.Group.Name)}
		}
	}
}

// foldSpec2Files keeps one entry per file, where its path first appears: the
// last write of it (a later write replaces earlier contents and appends), or
// its first append when it is never written. appends[i] lists the appends
// that follow entry i, which v24tov31 cannot express (one source per entry).
func foldSpec2Files(in []ign2types.File, fsMap map[string]string) (out []ign2types.File, appends [][]ign2types.File) {
	at := map[string]int{}
	for _, f := range in {
		key := f.Filesystem + ":" + f.Path
		if m, ok := fsMap[f.Filesystem]; ok {
			key = path.Join("/", m, f.Path)
		}
		i, seen := at[key]
		switch {
		case !seen:
			at[key] = len(out)
			out = append(out, f)
			appends = append(appends, nil)
		case f.Append:
			appends[i] = append(appends[i], f)
		default:
			out[i], appends[i] = f, nil
		}
	}
	return out, appends
}

// foldBy keeps one entry per key, where it first appears, and merges each
// repeat into it.
func foldBy[T any](in []T, key func(T) string, merge func(first *T, repeat T)) []T {
	var out []T
	at := map[string]int{}
	for _, x := range in {
		if i, seen := at[key(x)]; seen {
			merge(&out[i], x)
			continue
		}
		at[key(x)] = len(out)
		out = append(out, x)
	}
	return out
}

// foldSpec2Units keeps one entry per unit, where its name first appears,
// folded as the MCO folds them (removeIgnDuplicateFilesUnitsUsers in
// machine-config-operator's pkg/controller/common/helpers.go): the last
// entry of a name, to which the earlier entries add the drop-ins it lacks,
// the later entries first. Where the MCO would then lose what an earlier
// entry set and the last one leaves out, the earlier entry's is kept, as
// Ignition v0.x applies spec 2's repeats: the last non-empty contents (of
// the unit and of each drop-in) and the last enabled setting win, and a
// mask stays.
func foldSpec2Units(in []ign2types.Unit) []ign2types.Unit {
	name := func(u ign2types.Unit) string { return u.Name }
	out := foldBy(reversed(in), name, func(o *ign2types.Unit, u ign2types.Unit) {
		if o.Contents == "" {
			o.Contents = u.Contents
		}
		if o.Enabled == nil {
			o.Enabled = u.Enabled
		}
		o.Enable = o.Enable || u.Enable
		o.Mask = o.Mask || u.Mask
		o.Dropins = slices.Clone(o.Dropins)
		for _, d := range u.Dropins {
			j := slices.IndexFunc(o.Dropins, func(x ign2types.SystemdDropin) bool { return x.Name == d.Name })
			switch {
			case j < 0:
				o.Dropins = append(o.Dropins, d)
			case o.Dropins[j].Contents == "":
				o.Dropins[j].Contents = d.Contents
			}
		}
	})
	return inFirstOrder(out, in, name)
}

// foldSpec2Users keeps one entry per user, where its name first appears, as
// the MCO folds a spec 2 config's users (removeIgnDuplicateFilesUnitsUsers
// and dedupePasswdUserSSHKeys, above): the last entry's fields, with its SSH
// keys first, then each earlier entry's, from the last to the first, each
// key once. The key order is in the rendered name.
func foldSpec2Users(in []ign2types.PasswdUser) []ign2types.PasswdUser {
	name := func(u ign2types.PasswdUser) string { return u.Name }
	out := foldBy(reversed(in), name, func(o *ign2types.PasswdUser, u ign2types.PasswdUser) {
		o.SSHAuthorizedKeys = append(slices.Clip(o.SSHAuthorizedKeys), u.SSHAuthorizedKeys...)
	})
	for i := range out {
		var keys []ign2types.SSHAuthorizedKey
		seen := map[ign2types.SSHAuthorizedKey]bool{}
		for _, k := range out[i].SSHAuthorizedKeys {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		out[i].SSHAuthorizedKeys = keys
	}
	return inFirstOrder(out, in, name)
}

// reversed is a reversed copy: folded from the last entry to the first, the
// last entry of each key is the one kept, as the MCO keeps it.
func reversed[T any](in []T) []T {
	out := slices.Clone(in)
	slices.Reverse(out)
	return out
}

// inFirstOrder sorts folded entries by where their key first appears in in.
func inFirstOrder[T any](out, in []T, key func(T) string) []T {
	first := map[string]int{}
	for n := len(in) - 1; n >= 0; n-- {
		first[key(in[n])] = n
	}
	slices.SortStableFunc(out, func(a, b T) int { return first[key(a)] - first[key(b)] })
	return out
}

func spec2Headers(hs ign2types.HTTPHeaders) t31.HTTPHeaders {
	var out t31.HTTPHeaders
	for _, h := range hs {
		out = append(out, t31.HTTPHeader{Name: h.Name, Value: strPtr(h.Value)})
	}
	return out
}

// strPtr maps "" to nil, as ign-converter does for spec 2's plain strings.
func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
