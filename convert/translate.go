package convert

import (
	"fmt"

	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/ignition/v2/config/validate"
)

// translate writes cfg as the typed config of spec target (a value of that
// version's types.Config), given what MinVersion found for cfg, writing the
// directory modes in written as written when target is before 3.6. It fails
// with a CannotExpressError listing every field that needs a newer spec, and
// proves the result lossless: translated back up, it must equal cfg, or a
// lossError names what differs. The result passes Ignition's validation for
// the target spec, or an InvalidError says why (valid, when not nil,
// shares the validation of items other configs hold too).
func translate(cfg *Config, target Version, reasons []Reason, written WrittenModes, valid *ValidItems) (any, error) {
	in, out, err := downUnvalidated(cfg, target, reasons, written)
	if err != nil {
		return nil, err
	}
	// The validation and the proof read out alone: one beside the other.
	checked := beside(func() error { return validatedSpec3(out, target, valid) })
	proof := proveLossless(in, out, target)
	if err := checked(); err != nil {
		return nil, err
	}
	if proof != nil {
		return nil, proof
	}
	return out, nil
}

// down is translate without the proof: cfg as spec target's typed config,
// validated, and the config it came from as the proof reads it.
func down(cfg *Config, target Version, reasons []Reason, written WrittenModes, valid *ValidItems) (Config, any, error) {
	in, out, err := downUnvalidated(cfg, target, reasons, written)
	if err == nil {
		err = validatedSpec3(out, target, valid)
	}
	if err != nil {
		return Config{}, nil, err
	}
	return in, out, nil
}

// validatedSpec3 is validated for a config of spec 3 (spec 2's step
// validates its own output).
func validatedSpec3(cfg any, v Version, valid *ValidItems) error {
	if v.Major != 3 {
		return nil
	}
	return validated(cfg, v, valid)
}

// downUnvalidated is down without the validation.
func downUnvalidated(cfg *Config, target Version, reasons []Reason, written WrittenModes) (Config, any, error) {
	if !IsOutputVersion(target) {
		return Config{}, nil, &UnsupportedVersionError{Version: target.String(), Output: true}
	}
	blocked := ReasonsAbove(reasons, target)
	if target == V2_2 {
		blocked = append(blocked, spec2Blockers(cfg)...)
	}
	if len(blocked) > 0 {
		return Config{}, nil, &CannotExpressError{Target: target, Reasons: blocked}
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
			return Config{}, nil, &InvalidError{Version: s.to, Problems: ps}
		}
		if s.to == V3_5 {
			// Every spec before 3.6 carries the bits (and ignores them), and
			// each step down copies modes as they are.
			next = written.apply35(next.(t35.Config))
		}
		cur = next
	}
	// ign-converter's spec-2 step validates its output with spec 2's rules.
	return in, cur, nil
}

// validated runs Ignition's validation of the target spec, so translate never
// hands on a config that spec's Ignition would refuse.
func validated(cfg any, v Version, valid *ValidItems) error {
	if valid != nil && valid.Passes(cfg) {
		return nil
	}
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

// beside runs f in a goroutine and returns what waits for its result. A
// panic in f is raised again in the waiter, as if f had run there: the
// webhook's recoverer sees it, where a goroutine's own would end the
// process.
func beside[T any](f func() T) func() T {
	done := make(chan func() T, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- func() T { panic(p) }
			}
		}()
		v := f()
		done <- func() T { return v }
	}()
	return func() T { return (<-done)() }
}
