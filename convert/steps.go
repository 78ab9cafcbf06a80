package convert

import (
	"reflect"

	ign22 "github.com/coreos/ignition/config/v2_2/types"
	ign23 "github.com/coreos/ignition/config/v2_3"
	ign24 "github.com/coreos/ignition/config/v2_4"
	t30 "github.com/coreos/ignition/v2/config/v3_0/types"
	t31 "github.com/coreos/ignition/v2/config/v3_1/types"
	t32 "github.com/coreos/ignition/v2/config/v3_2/types"
	t33 "github.com/coreos/ignition/v2/config/v3_3/types"
	t34 "github.com/coreos/ignition/v2/config/v3_4/types"
	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
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
// steps up below (Ignition's, repaired) and, from spec 2, ign-converter's.
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

// The steps between spec-3 versions, down and up, as copies between the
// versions' types that name what each step drops or converts. They mirror
// Ignition's steps up (config/v3_N/translate) and ign-converter's steps
// down; neither is used: each of ign-converter's steps validates its input
// and its output, which made a 1 MB config take half a second to reach 3.0
// (every validation decodes every data URL), its 3.5→3.4 step drops fields,
// and Ignition's 3.4→3.5 step drops tang advertisements (see up34to35).
//
// Nothing here decides what a target can hold: MinVersion refuses that
// before any step runs, translate validates the result once at the target
// spec, and the lossless proof compares it with the input, so a field a step
// forgot is an error, never a silent loss. TestStepsKeepEveryField checks
// that every field of every spec survives the way up and back.

var (
	// 3.6 changed what special mode bits and custom Clevis pins mean,
	// which MinVersion refuses; the types are otherwise identical.
	copy36to35 = newCopier[Config, t35.Config]()
	// ign-converter's v35tov34 also drops tang advertisements, which 3.4 has.
	copy35to34 = newCopier[t35.Config, t34.Config](drop[t35.Luks]("Cex"))
	copy34to33 = newCopier[t34.Config, t33.Config](
		drop[t34.Luks]("Discard", "OpenOptions"),
		drop[t34.Tang]("Advertisement"))
	// 3.3 made Clevis, its custom pin, a link's target and a RAID level
	// optional (pointers become values and back; see copier).
	copy33to32 = newCopier[t33.Config, t32.Config](drop[t33.Config]("KernelArguments"))
	copy32to31 = newCopier[t32.Config, t31.Config](
		drop[t32.Storage]("Luks"),
		drop[t32.Partition]("Resize"),
		drop[t32.PasswdUser]("ShouldExist"),
		drop[t32.PasswdGroup]("ShouldExist"))
	// 3.1 merged the three resource types into one and added headers,
	// compression of configs and CAs, proxies and mount options.
	copy31to30 = newCopier[t31.Config, t30.Config](
		drop[t31.Ignition]("Proxy"),
		drop[t31.Filesystem]("MountOptions"),
		custom(func(r t31.Resource) t30.ConfigReference {
			return t30.ConfigReference{Source: r.Source, Verification: t30.Verification{Hash: r.Verification.Hash}}
		}),
		custom(func(r t31.Resource) t30.CaReference {
			return t30.CaReference{Source: deref(r.Source), Verification: t30.Verification{Hash: r.Verification.Hash}}
		}),
		custom(func(r t31.Resource) t30.FileContents {
			return t30.FileContents{Compression: r.Compression, Source: r.Source, Verification: t30.Verification{Hash: r.Verification.Hash}}
		}))

	copy30to31 = newCopier[t30.Config, t31.Config](
		custom(func(r t30.ConfigReference) t31.Resource {
			return t31.Resource{Source: r.Source, Verification: t31.Verification{Hash: r.Verification.Hash}}
		}),
		custom(func(r t30.CaReference) t31.Resource {
			return t31.Resource{Source: &r.Source, Verification: t31.Verification{Hash: r.Verification.Hash}}
		}),
		custom(func(r t30.FileContents) t31.Resource {
			return t31.Resource{Compression: r.Compression, Source: r.Source, Verification: t31.Verification{Hash: r.Verification.Hash}}
		}))
	copy31to32 = newCopier[t31.Config, t32.Config]()
	copy32to33 = newCopier[t32.Config, t33.Config]()
	copy33to34 = newCopier[t33.Config, t34.Config]()
	copy34to35 = newCopier[t34.Config, t35.Config]()
	copy35to36 = newCopier[t35.Config, Config]()
)

func down36to35(old Config) (ret t35.Config)     { return copyStep(copy36to35, old, ret, V3_5) }
func down35to34(old t35.Config) (ret t34.Config) { return copyStep(copy35to34, old, ret, V3_4) }
func down34to33(old t34.Config) (ret t33.Config) { return copyStep(copy34to33, old, ret, V3_3) }
func down33to32(old t33.Config) (ret t32.Config) { return copyStep(copy33to32, old, ret, V3_2) }
func down32to31(old t32.Config) (ret t31.Config) { return copyStep(copy32to31, old, ret, V3_1) }
func down31to30(old t31.Config) (ret t30.Config) { return copyStep(copy31to30, old, ret, V3_0) }

func up30to31(old t30.Config) (ret t31.Config) { return copyStep(copy30to31, old, ret, V3_1) }
func up31to32(old t31.Config) (ret t32.Config) { return copyStep(copy31to32, old, ret, V3_2) }
func up32to33(old t32.Config) (ret t33.Config) { return copyStep(copy32to33, old, ret, V3_3) }
func up33to34(old t33.Config) (ret t34.Config) { return copyStep(copy33to34, old, ret, V3_4) }

// up34to35 keeps tang advertisements: Ignition v2.27.0's config/v3_5/translate
// copies a tang entry's thumbprint and URL but not its advertisement, so every
// Ignition that reads 3.5 or newer drops the advertisement of a 3.4 config
// (and with it offline provisioning). The server never sends such a client
// 3.4, but Parse reads 3.4 configs, and must not lose them.
func up34to35(old t34.Config) (ret t35.Config) { return copyStep(copy34to35, old, ret, V3_5) }

// up35to36 masks the special mode bits, as Ignition's step does: specs before
// 3.6 ignore them, so a config that sets them meant the mode without them.
func up35to36(old t35.Config) Config {
	ret := copyStep(copy35to36, old, Config{}, V3_6)
	for i, f := range ret.Storage.Files {
		if f.Mode != nil {
			ret.Storage.Files[i].Mode = intPtr(*f.Mode &^ 0o7000)
		}
	}
	for i, d := range ret.Storage.Directories {
		if d.Mode != nil {
			ret.Storage.Directories[i].Mode = intPtr(*d.Mode &^ 0o7000)
		}
	}
	return ret
}

// copyStep copies old into a new T and labels it with spec v.
func copyStep[F, T any](c *copier, old F, ret T, v Version) T {
	c.copy(&ret, &old)
	setVersion(&ret, v)
	return ret
}

// setVersion sets ignition.version of a typed config of any spec 3 version.
func setVersion(cfg any, v Version) {
	reflect.ValueOf(cfg).Elem().FieldByName("Ignition").FieldByName("Version").SetString(v.String())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
