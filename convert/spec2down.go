package convert

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	v32tov22 "github.com/coreos/ign-converter/translate/v32tov22"
	ign22 "github.com/coreos/ignition/config/v2_2/types"
	ign2validate "github.com/coreos/ignition/config/validate"
	t32 "github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/coreos/ignition/v2/config/v3_6/types"
)

// spec2Step is the one step to spec 2: from 3.2, the newest spec-3 version
// ign-converter translates to 2.2 from.
var spec2Step = step{V3_2, V2_2, "ign-converter (with mcs's defaults and filesystem fix)", func(c any) (any, error) { return down32to22(c.(t32.Config)) }}

// down32to22 is ign-converter's v32tov22 with two repairs. Spec 2 Ignition
// (v0.x) gives a file or directory without a mode the mode 0, where spec 3
// means 0644 and 0755, so those defaults are written out. And v32tov22 puts a
// node on the filesystem whose path is a string prefix of the node's path
// (/varlib/x on /var, as "lib/x", which then fails validation), so it is given
// the filesystems without their paths, and nodes are placed here instead, on
// path boundaries, and the result validated again.
func down32to22(c t32.Config) (ign22.Config, error) {
	c.Storage.Files = slices.Clone(c.Storage.Files)
	for i, f := range c.Storage.Files {
		// Only a file Ignition writes from scratch takes the default; one
		// that is only appended to keeps its mode in both specs.
		if f.Mode == nil && f.Contents.Source != nil {
			c.Storage.Files[i].Mode = intPtr(0o644)
		}
	}
	c.Storage.Directories = slices.Clone(c.Storage.Directories)
	for i, d := range c.Storage.Directories {
		if d.Mode == nil {
			c.Storage.Directories[i].Mode = intPtr(0o755)
		}
	}
	fss := c.Storage.Filesystems
	c.Storage.Filesystems = slices.Clone(fss)
	for i := range c.Storage.Filesystems {
		c.Storage.Filesystems[i].Path = nil
	}
	out, err := v32tov22.Translate(c)
	if err != nil {
		return out, err
	}
	// Spec 2 names filesystems; as in v32tov22, a mounted one is named by
	// its path (which is how spec2To3 finds the path again), others by number.
	var mounts []string
	n := 0
	for i, fs := range fss {
		if fs.Path != nil {
			out.Storage.Filesystems[i].Name = *fs.Path
			mounts = append(mounts, *fs.Path)
			continue
		}
		n++
		out.Storage.Filesystems[i].Name = strconv.Itoa(n)
	}
	for i := range out.Storage.Files {
		place(&out.Storage.Files[i].Node, mounts)
	}
	for i := range out.Storage.Directories {
		place(&out.Storage.Directories[i].Node, mounts)
	}
	for i := range out.Storage.Links {
		place(&out.Storage.Links[i].Node, mounts)
	}
	if r := ign2validate.ValidateWithoutSource(reflect.ValueOf(out)); r.IsFatal() {
		return ign22.Config{}, fmt.Errorf("spec 2.2 output is invalid: %s", r.String())
	}
	return out, nil
}

// place puts a spec-2 node, given on the root filesystem, on the filesystem
// mounted deepest above it, with its path relative to that filesystem.
func place(n *ign22.Node, mounts []string) {
	best := ""
	for _, m := range mounts {
		root := strings.TrimSuffix(m, "/")
		if (n.Path == root || strings.HasPrefix(n.Path, root+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return
	}
	rel := strings.TrimPrefix(n.Path, strings.TrimSuffix(best, "/"))
	if rel == "" {
		rel = "/"
	}
	n.Filesystem, n.Path = best, rel
}

func intPtr(i int) *int { return &i }

// spec2Equivalent maps values spec 3 can tell apart but spec 2 cannot, and
// that mean the same on a node, to one form, so the lossless proof for spec
// 2.2 compares meaning rather than spelling. It returns a copy; c is not changed.
//
//   - Empty unit and drop-in bodies become none. Spec 2's contents are plain
//     strings, and Ignition v0.x skips empty ones, while spec 3 writes an empty
//     file. OpenShift's base configs carry empty drop-ins that exist to clear an
//     earlier one on update; on a first boot there is nothing to clear.
//   - Strings and booleans spec 2 holds without a pointer (gecos, shell, mask,
//     wipeTable, hard, compression, partition labels and so on): "" and false
//     are what spec 3 does when they are unset.
//   - An append without a source appends nothing in both specs; spec 2
//     writes it as an empty source.
//   - A file's overwrite defaults to false, its mode (when it has contents) to
//     0644 and a directory's mode to 0755: down32to22 writes those out.
func spec2Equivalent(c Config) Config {
	spec2EquivalentSystemd(&c.Systemd)
	spec2EquivalentPasswd(&c.Passwd)
	spec2EquivalentDevices(&c.Storage)
	spec2EquivalentNodes(&c.Storage)
	return c
}

// edited returns a copy of in with f applied to each element.
func edited[T any](in []T, f func(*T)) []T {
	out := slices.Clone(in)
	for i := range out {
		f(&out[i])
	}
	return out
}

// nilIfZero sets each pointer to "", false or 0 to nil.
func nilIfZero[T comparable](ps ...**T) {
	var zero T
	for _, p := range ps {
		if *p != nil && **p == zero {
			*p = nil
		}
	}
}

func spec2EquivalentSystemd(sd *types.Systemd) {
	sd.Units = edited(sd.Units, func(u *types.Unit) {
		nilIfZero(&u.Contents)
		nilIfZero(&u.Mask)
		u.Dropins = edited(u.Dropins, func(d *types.Dropin) { nilIfZero(&d.Contents) })
	})
}

func spec2EquivalentPasswd(pw *types.Passwd) {
	pw.Users = edited(pw.Users, func(u *types.PasswdUser) {
		nilIfZero(&u.Gecos, &u.HomeDir, &u.PrimaryGroup, &u.Shell)
		nilIfZero(&u.NoCreateHome, &u.NoUserGroup, &u.NoLogInit, &u.System)
	})
	pw.Groups = edited(pw.Groups, func(g *types.PasswdGroup) { nilIfZero(&g.PasswordHash); nilIfZero(&g.System) })
}

// spec2EquivalentDevices covers disks, RAID arrays and filesystems.
func spec2EquivalentDevices(s *types.Storage) {
	s.Disks = edited(s.Disks, func(d *types.Disk) {
		nilIfZero(&d.WipeTable)
		d.Partitions = edited(d.Partitions, func(p *types.Partition) { nilIfZero(&p.Label, &p.TypeGUID, &p.GUID) })
	})
	s.Raid = edited(s.Raid, func(r *types.Raid) { nilIfZero(&r.Spares) })
	s.Filesystems = edited(s.Filesystems, func(f *types.Filesystem) { nilIfZero(&f.Format); nilIfZero(&f.WipeFilesystem) })
}

// spec2EquivalentNodes covers files, directories and links.
func spec2EquivalentNodes(s *types.Storage) {
	s.Files = edited(s.Files, func(f *types.File) {
		spec2Node(&f.Node)
		if f.Overwrite == nil {
			f.Overwrite = new(false)
		}
		if f.Mode == nil && f.Contents.Source != nil {
			f.Mode = intPtr(0o644)
		}
		nilIfZero(&f.Contents.Compression)
		f.Append = edited(f.Append, func(a *types.Resource) { nilIfZero(&a.Compression, &a.Source) })
	})
	s.Directories = edited(s.Directories, func(d *types.Directory) {
		spec2Node(&d.Node)
		if d.Mode == nil {
			d.Mode = intPtr(0o755)
		}
	})
	s.Links = edited(s.Links, func(l *types.Link) {
		spec2Node(&l.Node)
		nilIfZero(&l.Hard)
	})
}

func spec2Node(n *types.Node) { nilIfZero(&n.User.Name, &n.Group.Name) }
