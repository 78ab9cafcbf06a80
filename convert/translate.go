package convert

import (
	"fmt"

	v32tov22 "github.com/coreos/ign-converter/translate/v32tov22"
	v32tov31 "github.com/coreos/ign-converter/translate/v32tov31"
	v33tov32 "github.com/coreos/ign-converter/translate/v33tov32"
	v34tov33 "github.com/coreos/ign-converter/translate/v34tov33"
	ign22 "github.com/coreos/ignition/config/v2_2/types"
	ign23 "github.com/coreos/ignition/config/v2_3"
	ign24 "github.com/coreos/ignition/config/v2_4"
	t30 "github.com/coreos/ignition/v2/config/v3_0/types"
	up31 "github.com/coreos/ignition/v2/config/v3_1/translate"
	t31 "github.com/coreos/ignition/v2/config/v3_1/types"
	up32 "github.com/coreos/ignition/v2/config/v3_2/translate"
	t32 "github.com/coreos/ignition/v2/config/v3_2/types"
	up33 "github.com/coreos/ignition/v2/config/v3_3/translate"
	t33 "github.com/coreos/ignition/v2/config/v3_3/types"
	up34 "github.com/coreos/ignition/v2/config/v3_4/translate"
	t34 "github.com/coreos/ignition/v2/config/v3_4/types"
	up35 "github.com/coreos/ignition/v2/config/v3_5/translate"
	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	up36 "github.com/coreos/ignition/v2/config/v3_6/translate"
	"github.com/coreos/ignition/v2/config/v3_6/types"
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
	{V3_6, V3_5, "mcs", func(c any) (any, error) { return down36to35(c.(Config)) }},
	{V3_5, V3_4, "mcs (ign-converter's step drops luks.cex and tang.advertisement)", func(c any) (any, error) { return down35to34(c.(t35.Config)) }},
	{V3_4, V3_3, "ign-converter", func(c any) (any, error) { return v34tov33.Translate(c.(t34.Config)) }},
	{V3_3, V3_2, "ign-converter", func(c any) (any, error) { return v33tov32.Translate(c.(t33.Config)) }},
	{V3_2, V3_1, "ign-converter", func(c any) (any, error) { return v32tov31.Translate(c.(t32.Config)) }},
	{V3_1, V3_0, "mcs", func(c any) (any, error) { return down31to30(c.(t31.Config)) }},
}

var spec2Step = step{V3_2, V2_2, "ign-converter", func(c any) (any, error) { return v32tov22.Translate(c.(t32.Config)) }}

// path returns the steps from the newest spec down to target.
func path(target Version) []step {
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

// upFrom translates a typed config of spec v up to the newest spec, with
// Ignition's own translators (and ign-converter's for spec 2).
func upFrom(v Version, c any) (Config, error) {
	switch v {
	case V2_2:
		c24 := ign24.Translate(ign23.Translate(c.(ign22.Config)))
		c3, err := spec2To3(c24)
		return c3, err
	case V3_0:
		c = up31.Translate(c.(t30.Config))
		fallthrough
	case V3_1:
		c = up32.Translate(c.(t31.Config))
		fallthrough
	case V3_2:
		c = up33.Translate(c.(t32.Config))
		fallthrough
	case V3_3:
		c = up34.Translate(c.(t33.Config))
		fallthrough
	case V3_4:
		c = up35.Translate(c.(t34.Config))
		fallthrough
	case V3_5:
		c = up36.Translate(c.(t35.Config))
		fallthrough
	case V3_6:
		return c.(Config), nil
	}
	return Config{}, &UnsupportedVersionError{Version: v.String(), Output: true}
}

// Translate writes cfg as the typed config of spec target (a value of that
// version's types.Config). It fails with a CannotExpressError listing every
// field that needs a newer spec, and proves the result lossless: translated
// back up, it must equal cfg, or a LossError names what differs.
func Translate(cfg *Config, target Version) (any, error) {
	if !IsOutputVersion(target) {
		return nil, &UnsupportedVersionError{Version: target.String(), Output: true}
	}
	_, reasons := MinVersion(cfg)
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
	for _, s := range path(target) {
		next, err := s.down(cur)
		if err != nil {
			return nil, fmt.Errorf("translating spec %s to %s: %w", s.from, s.to, err)
		}
		cur = next
	}
	if err := proveLossless(in, cur, target); err != nil {
		return nil, err
	}
	return cur, nil
}

// proveLossless translates out (spec target) back up and compares it with in.
// On a difference it finds the first step that loses something, to name it.
func proveLossless(in Config, out any, target Version) error {
	back, err := upFrom(target, out)
	if err != nil {
		return &LossError{Target: target, Diffs: []Problem{{Message: "translating back up failed: " + err.Error()}}}
	}
	if target == V2_2 {
		in, back = spec2Equivalent(in), spec2Equivalent(back)
	}
	d := diff(in, back)
	if len(d) == 0 {
		return nil
	}
	return &LossError{Target: target, Step: culprit(in, target), Diffs: d}
}

// culprit re-runs the chain one step at a time and returns the first step
// whose output, translated up, differs from its input translated up.
func culprit(in Config, target Version) string {
	var cur any = in
	prev := in
	for _, s := range path(target) {
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

// spec2Equivalent maps an empty unit or drop-in body to none. Spec 2 has no
// way to say "empty" (its contents are plain strings, and Ignition v0.x skips
// empty ones), while spec 3 writes an empty file. OpenShift's base configs
// carry empty drop-ins that exist to clear an earlier one on update; on a
// first boot there is nothing to clear, so this is the one difference the
// spec-2 translation is allowed. It returns a copy; c is not changed.
func spec2Equivalent(c Config) Config {
	units := make([]types.Unit, len(c.Systemd.Units))
	for i, u := range c.Systemd.Units {
		if u.Contents != nil && *u.Contents == "" {
			u.Contents = nil
		}
		if len(u.Dropins) > 0 {
			ds := make([]types.Dropin, len(u.Dropins))
			for j, d := range u.Dropins {
				if d.Contents != nil && *d.Contents == "" {
					d.Contents = nil
				}
				ds[j] = d
			}
			u.Dropins = ds
		}
		units[i] = u
	}
	c.Systemd.Units = units
	return c
}
