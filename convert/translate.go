package convert

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	v32tov22 "github.com/coreos/ign-converter/translate/v32tov22"
	ign22 "github.com/coreos/ignition/config/v2_2/types"
	ign23 "github.com/coreos/ignition/config/v2_3"
	ign24 "github.com/coreos/ignition/config/v2_4"
	ign2validate "github.com/coreos/ignition/config/validate"
	t30 "github.com/coreos/ignition/v2/config/v3_0/types"
	t31 "github.com/coreos/ignition/v2/config/v3_1/types"
	t32 "github.com/coreos/ignition/v2/config/v3_2/types"
	t33 "github.com/coreos/ignition/v2/config/v3_3/types"
	t34 "github.com/coreos/ignition/v2/config/v3_4/types"
	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/ignition/v2/config/validate"
)

// step translates one spec down to the next older one. Steps are listed from
// the newest spec down; spec 2.2 hangs off 3.2, the newest spec-3 version
// ign-converter translates to 2.2 from.
type step struct {
	from, to Version
	by       string // who wrote the step, for loss reports
	down     func(any) (any, error)
}

var steps = []step{
	{V3_6, V3_5, "mcs", func(c any) (any, error) { return down36to35(c.(Config)), nil }},
	{V3_5, V3_4, "mcs", func(c any) (any, error) { return down35to34(c.(t35.Config)), nil }},
	{V3_4, V3_3, "mcs", func(c any) (any, error) { return down34to33(c.(t34.Config)), nil }},
	{V3_3, V3_2, "mcs", func(c any) (any, error) { return down33to32(c.(t33.Config)), nil }},
	{V3_2, V3_1, "mcs", func(c any) (any, error) { return down32to31(c.(t32.Config)), nil }},
	{V3_1, V3_0, "mcs", func(c any) (any, error) { return down31to30(c.(t31.Config)), nil }},
}

var spec2Step = step{V3_2, V2_2, "ign-converter (with mcs's defaults and filesystem fix)", func(c any) (any, error) { return down32to22(c.(t32.Config)) }}

// chain returns the steps from the newest spec down to target.
func chain(target Version) []step {
	var out []step
	stop := target
	if target == V2_2 {
		stop = V3_2
	}
	for _, s := range steps {
		if s.from == stop {
			break
		}
		out = append(out, s)
	}
	if target == V2_2 {
		out = append(out, spec2Step)
	}
	return out
}

// upFrom translates a typed config of spec v up to the newest spec, with the
// steps up in down.go (Ignition's, repaired) and, from spec 2, ign-converter's.
func upFrom(v Version, c any) (Config, error) {
	if v == V2_2 {
		return spec2To3(ign24.Translate(ign23.Translate(c.(ign22.Config))))
	}
	if v.Major != 3 || !IsOutputVersion(v) {
		return Config{}, &UnsupportedVersionError{Version: v.String(), Output: true}
	}
	for _, s := range upSteps {
		if !s.from.Less(v) {
			c = s.up(c)
		}
	}
	return c.(Config), nil
}

// upSteps translate one spec up to the next, oldest first.
var upSteps = []struct {
	from Version
	up   func(any) any
}{
	{V3_0, func(c any) any { return up30to31(c.(t30.Config)) }},
	{V3_1, func(c any) any { return up31to32(c.(t31.Config)) }},
	{V3_2, func(c any) any { return up32to33(c.(t32.Config)) }},
	{V3_3, func(c any) any { return up33to34(c.(t33.Config)) }},
	{V3_4, func(c any) any { return up34to35(c.(t34.Config)) }},
	{V3_5, func(c any) any { return up35to36(c.(t35.Config)) }},
}

// translate writes cfg as the typed config of spec target (a value of that
// version's types.Config), given what MinVersion found for cfg, writing the
// directory modes in written as written when target is before 3.6. It fails
// with a CannotExpressError listing every field that needs a newer spec, and
// proves the result lossless: translated back up, it must equal cfg, or a
// lossError names what differs. The result passes Ignition's validation for
// the target spec, or an InvalidError says why.
func translate(cfg *Config, target Version, reasons []Reason, written WrittenModes) (any, error) {
	if !IsOutputVersion(target) {
		return nil, &UnsupportedVersionError{Version: target.String(), Output: true}
	}
	blocked := ReasonsAbove(reasons, target)
	if target == V2_2 {
		blocked = append(blocked, spec2Blockers(cfg)...)
	}
	if len(blocked) > 0 {
		return nil, &CannotExpressError{Target: target, Reasons: blocked}
	}

	in := *cfg
	in.Ignition.Version = Newest.String()
	var cur any = in
	for _, s := range chain(target) {
		next, err := s.down(cur)
		if err != nil {
			// Only the spec-2 step fails: v32tov22 refuses what its checks
			// or spec 2's validation refuse, and MinVersion did not foresee.
			ps := reportProblems(err)
			for i := range ps {
				ps[i].Message = fmt.Sprintf("translating spec %s to %s: %s", s.from, s.to, ps[i].Message)
			}
			return nil, &InvalidError{Version: s.to, Problems: ps}
		}
		if s.to == V3_5 {
			// Every spec before 3.6 carries the bits (and ignores them), and
			// each step down copies modes as they are.
			next = written.apply35(next.(t35.Config))
		}
		cur = next
	}
	// ign-converter's spec-2 step validates its output with spec 2's rules.
	if target.Major == 3 {
		if err := validated(cur, target); err != nil {
			return nil, err
		}
	}
	if err := proveLossless(in, cur, target); err != nil {
		return nil, err
	}
	return cur, nil
}

// validated runs Ignition's validation of the target spec, so translate never
// hands on a config that spec's Ignition would refuse.
func validated(cfg any, v Version) error {
	rpt := validate.ValidateWithContext(cfg, nil)
	if rpt.IsFatal() {
		return &InvalidError{Version: v, Problems: problems(rpt, nil)}
	}
	return nil
}

// proveLossless translates out (spec target) back up and compares it with in.
// On a difference it finds the first step that loses something, to name it.
func proveLossless(in Config, out any, target Version) error {
	back, err := upFrom(target, out)
	if err != nil {
		return &lossError{Target: target, Diffs: []Problem{{Message: "translating back up failed: " + err.Error()}}}
	}
	if target == V2_2 {
		in, back = spec2Equivalent(in), spec2Equivalent(back)
	}
	d := diff(in, back)
	if len(d) == 0 {
		return nil
	}
	return &lossError{Target: target, Step: culprit(in, target), Diffs: d}
}

// culprit re-runs the chain one step at a time and returns the first step
// whose output, translated up, differs from its input translated up.
func culprit(in Config, target Version) string {
	var cur any = in
	prev := in
	for _, s := range chain(target) {
		next, err := s.down(cur)
		if err != nil {
			return ""
		}
		up, err := upFrom(s.to, next)
		if s.to == V2_2 {
			prev, up = spec2Equivalent(prev), spec2Equivalent(up)
		}
		if err != nil || len(diff(prev, up)) > 0 {
			return fmt.Sprintf("%s→%s by %s", s.from, s.to, s.by)
		}
		cur, prev = next, up
	}
	return ""
}

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

// mapped returns f applied to a copy of each element.
func mapped[T any](in []T, f func(T) T) []T {
	out := make([]T, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

func spec2EquivalentSystemd(sd *types.Systemd) {
	sd.Units = mapped(sd.Units, func(u types.Unit) types.Unit {
		u.Contents, u.Mask = nilIfZero(u.Contents), nilIfZero(u.Mask)
		if len(u.Dropins) > 0 {
			u.Dropins = mapped(u.Dropins, func(d types.Dropin) types.Dropin {
				d.Contents = nilIfZero(d.Contents)
				return d
			})
		}
		return u
	})
}

func spec2EquivalentPasswd(pw *types.Passwd) {
	pw.Users = mapped(pw.Users, func(u types.PasswdUser) types.PasswdUser {
		u.Gecos, u.HomeDir, u.PrimaryGroup, u.Shell = nilIfZero(u.Gecos), nilIfZero(u.HomeDir), nilIfZero(u.PrimaryGroup), nilIfZero(u.Shell)
		u.NoCreateHome, u.NoUserGroup, u.NoLogInit, u.System = nilIfZero(u.NoCreateHome), nilIfZero(u.NoUserGroup), nilIfZero(u.NoLogInit), nilIfZero(u.System)
		return u
	})
	pw.Groups = mapped(pw.Groups, func(g types.PasswdGroup) types.PasswdGroup {
		g.PasswordHash, g.System = nilIfZero(g.PasswordHash), nilIfZero(g.System)
		return g
	})
}

// spec2EquivalentDevices covers disks, RAID arrays and filesystems.
func spec2EquivalentDevices(s *types.Storage) {
	s.Disks = mapped(s.Disks, func(d types.Disk) types.Disk {
		d.WipeTable = nilIfZero(d.WipeTable)
		d.Partitions = mapped(d.Partitions, func(p types.Partition) types.Partition {
			p.Label, p.TypeGUID, p.GUID = nilIfZero(p.Label), nilIfZero(p.TypeGUID), nilIfZero(p.GUID)
			return p
		})
		return d
	})
	s.Raid = mapped(s.Raid, func(r types.Raid) types.Raid {
		r.Spares = nilIfZero(r.Spares)
		return r
	})
	s.Filesystems = mapped(s.Filesystems, func(f types.Filesystem) types.Filesystem {
		f.Format, f.WipeFilesystem = nilIfZero(f.Format), nilIfZero(f.WipeFilesystem)
		return f
	})
}

// spec2EquivalentNodes covers files, directories and links.
func spec2EquivalentNodes(s *types.Storage) {
	s.Files = mapped(s.Files, func(f types.File) types.File {
		f.Node = spec2Node(f.Node)
		if f.Overwrite == nil {
			f.Overwrite = new(false)
		}
		if f.Mode == nil && f.Contents.Source != nil {
			f.Mode = intPtr(0o644)
		}
		f.Contents.Compression = nilIfZero(f.Contents.Compression)
		if len(f.Append) > 0 {
			f.Append = mapped(f.Append, func(a types.Resource) types.Resource {
				a.Compression, a.Source = nilIfZero(a.Compression), nilIfZero(a.Source)
				return a
			})
		}
		return f
	})
	s.Directories = mapped(s.Directories, func(d types.Directory) types.Directory {
		d.Node = spec2Node(d.Node)
		if d.Mode == nil {
			d.Mode = intPtr(0o755)
		}
		return d
	})
	s.Links = mapped(s.Links, func(l types.Link) types.Link {
		l.Node = spec2Node(l.Node)
		l.Hard = nilIfZero(l.Hard)
		return l
	})
}

func spec2Node(n types.Node) types.Node {
	n.User.Name, n.Group.Name = nilIfZero(n.User.Name), nilIfZero(n.Group.Name)
	return n
}

// nilIfZero maps a pointer to "", false or 0 to nil.
func nilIfZero[T comparable](p *T) *T {
	var zero T
	if p != nil && *p == zero {
		return nil
	}
	return p
}
