// Package admit stores every MachineConfig at the lowest Ignition spec able to express it, losslessly, as a mutating admission webhook beside OpenShift's own controllers.
package admit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/releases"
	"github.com/ignition-mcs/mcs/render"
)

// Result is what Lower found for one config.
type Result struct {
	// Config is what to store: the config re-encoded at Stored, or the
	// input, byte for byte, when it is not rewritten.
	Config []byte
	// Declared is the spec the input declares; zero when it did not parse.
	Declared convert.Version
	// Stored is the spec of Config.
	Stored convert.Version
	// Needs is the lowest spec able to express the config; Reasons say,
	// field by field, what needs more than spec 3.0.0, and Above those
	// that need more than the ceiling.
	Needs   convert.Version
	Reasons []convert.Reason
	Above   []convert.Reason
	// Lost is, when the config is stored above the ceiling although no
	// field needs more than it, what a reader would have read otherwise
	// at the ceiling, field by field (see Lower): each is also in Above,
	// needing the spec stored.
	Lost []convert.Loss
}

// Changed reports whether Config differs from the input.
func (r *Result) Changed() bool { return r.Stored != r.Declared }

// Why a config passes unchanged; bounded, for metric labels.
const (
	PassSpec2      = "spec2"      // spec 2: OpenShift converts it itself
	PassInvalid    = "invalid"    // it does not parse (or not strictly)
	PassRefused    = "refused"    // it parses; the cluster's operator refuses it at its newer spec
	PassUnprovable = "unprovable" // no lower spec proved lossless
	PassCostly     = "costly"     // too costly to prove within a review's time (see tooCostly)
)

// PassError is a config Lower leaves as it is, and why. Lower's Result then
// holds the input unchanged.
type PassError struct {
	Kind string // PassSpec2, PassInvalid, PassRefused, PassUnprovable or PassCostly
	Err  error
}

func (e *PassError) Error() string {
	switch e.Kind {
	case PassSpec2, PassRefused:
		return "stored as written: " + e.Err.Error()
	case PassCostly:
		return "stored as written: " + e.Err.Error()
	case PassUnprovable:
		return "stored as written: no lower spec could be proven lossless: " + e.Err.Error()
	}
	return "stored as written: it does not parse: " + e.Err.Error()
}

func (e *PassError) Unwrap() error { return e.Err }

// Lower re-encodes an Ignition config (a MachineConfig's spec.config) at
// the lowest spec able to express it, never below render.DefaultMinSpec,
// the floor every OpenShift release since 4.6 reads, and never above the
// spec the input declares. A spec is taken only when it is lossless as its
// readers read it, judged by their own code (convert.Judge): Ignition's
// ParseCompatibleVersion, at the newest spec of OpenShift's
// machine-config-operator (reads, or the newest release's when zero), of
// the release a rollback returns to (ceiling) and of the input's own spec,
// must read the stored bytes as it reads the input, and a reader of the
// ceiling must parse them (Ignition's parse validates them: the converter's
// own validation and proof, which stand in for the readers where none
// judges, are not run, see convert.Encoder.Judged). Else the next spec up
// is tried.
// ceiling (zero: none) does not otherwise change what is stored: Above
// lists the fields that need more than it, for the caller to warn or
// refuse, among them those a reader loses at every spec up to the ceiling
// (Lost says which reader and how): such a config is above the ceiling
// although no field is newer than it. An empty config ("", {} or null) is
// kept as it is. A config that is spec 2, does not parse, or has no
// lossless lower spec is kept byte for byte with a *PassError saying why,
// and so is one that OpenShift's machine-config-operator refuses though it
// is valid at its own spec (PassRefused, see readable). Same input, same
// bytes.
func Lower(raw []byte, ceiling convert.Version) (*Result, error) {
	return lower(context.Background(), raw, ceiling, convert.Version{}, nil)
}

// lower is Lower where the cluster's machine-config-operator reads spec
// reads (zero: not known), validating each spec it writes through valid
// (nil: alone), which reviews share: a new rendered config repeats most
// files and units of the one before it.
// Past tooCostly's bounds, or once ctx ends (checked between passes), it
// is kept as written with a PassCostly error.
func lower(ctx context.Context, raw []byte, ceiling, reads convert.Version, valid *convert.ValidItems) (*Result, error) {
	return lowerHolding(ctx, raw, ceiling, reads, valid, convert.MinHeld)
}

// lowerHolding is lower with the config's data URLs of at least min bytes
// held out (convert.Hold) for the parses, the encoding and the readers'
// judgement: the same answer (TestLowerHeldIsLower), in a fraction of the
// time, since a rendered config is mostly data URLs. Only a config stored
// lowered or as it is, within the ceiling, is answered so; anything else
// (a problem, a loss, a field above the ceiling) is decided again on the
// config itself, whose messages then name its real paths and positions.
func lowerHolding(ctx context.Context, raw []byte, ceiling, reads convert.Version, valid *convert.ValidItems, min int) (*Result, error) {
	if v, ok := convert.QuickVersion(raw); ok && v.Major == 3 {
		if held, ok := convert.Hold(raw, valid, min); ok {
			res, err := lowerAsIs(ctx, held.JSON, ceiling, reads, valid)
			if err == nil && len(res.Above) == 0 {
				if !res.Changed() {
					res.Config = raw
					return res, nil
				}
				if js, ok := held.Restore(res.Config); ok {
					res.Config = js
					return res, nil
				}
			}
			if err := stopped(ctx); err != nil {
				return &Result{Config: raw}, err
			}
		}
	}
	return lowerAsIs(ctx, raw, ceiling, reads, valid)
}

// lowerAsIs is lower on the config as it is.
func lowerAsIs(ctx context.Context, raw []byte, ceiling, reads convert.Version, valid *convert.ValidItems) (*Result, error) {
	res := &Result{Config: raw}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) || isEmptyObject(trimmed) {
		return res, nil
	}
	if trimmed[0] != '{' {
		return res, &PassError{Kind: PassInvalid, Err: errors.New("not a JSON object")}
	}
	if err := tooCostly(trimmed); err != nil {
		return res, &PassError{Kind: PassCostly, Err: err}
	}
	if err := stopped(ctx); err != nil { // a slow upload may have spent the budget
		return res, err
	}
	parsed, err := convert.ParseDeclaredValid(raw, valid)
	if err != nil {
		return res, &PassError{Kind: PassInvalid, Err: err}
	}
	res.Declared, res.Stored = parsed.Version, parsed.Version
	if parsed.Version.Major != 3 {
		return res, &PassError{Kind: PassSpec2, Err: fmt.Errorf("it is spec %s, which OpenShift translates itself; the webhook rewrites spec 3 only", parsed.Version)}
	}
	if err := stopped(ctx); err != nil {
		return res, err
	}
	// Every candidate is judged by the readers (lowest), which validate it
	// and compare it with the original: the encoder need not.
	enc := convert.NewEncoder(parsed.Config, false).Written(parsed.WrittenModes).Validating(valid).Judged()
	res.Needs, res.Reasons = enc.MinVersion()
	if !ceiling.IsZero() {
		res.Above = convert.ReasonsAbove(res.Reasons, ceiling)
	}
	if err := readable(enc, parsed.Version, res.Needs, reads); err != nil {
		return res, &PassError{Kind: PassRefused, Err: err}
	}
	if err := stopped(ctx); err != nil {
		return res, err
	}
	cands := candidates(res.Needs, parsed.Version)
	if len(cands) == 0 {
		return res, nil
	}
	judge, err := parsed.Judge(releases.Readers(ceiling, reads))
	if err != nil {
		return res, &PassError{Kind: PassInvalid, Err: err}
	}
	return res, res.lowest(ctx, enc, judge.Validating(valid), cands, ceiling)
}

// lowest stores the config at the first of cands (lowest first) that the
// converter writes and judge accepts, or leaves it as written with a
// *PassError. What the readers lose at the highest spec tried up to the
// ceiling is, when the config ends above the ceiling, Lost and Above.
func (res *Result) lowest(ctx context.Context, enc *convert.Encoder, judge *convert.Judge, cands []convert.Version, ceiling convert.Version) error {
	var first error
	var lost []convert.Loss
	for _, v := range cands {
		if err := stopped(ctx); err != nil {
			return err
		}
		out, err := enc.Encode(v, nil)
		if err == nil {
			if err := stopped(ctx); err != nil {
				return err
			}
			losses := judge.Losses(out.JSON)
			if len(losses) == 0 {
				res.Config, res.Stored = out.JSON, v
				break
			}
			if ceiling.IsZero() || !ceiling.Less(v) {
				lost = losses
			}
			err = &convert.LossesError{Losses: losses}
		}
		if first == nil {
			first = fmt.Errorf("spec %s: %w", v, err)
		}
	}
	if len(lost) > 0 && !ceiling.IsZero() && ceiling.Less(res.Stored) {
		res.Lost = lost
		res.Above = append(res.Above, lostAbove(lost, res.Reasons, res.Above, res.Stored)...)
	}
	if res.Stored == res.Declared && first != nil {
		return &PassError{Kind: PassUnprovable, Err: first}
	}
	return nil
}

// lostAbove are the reasons, beside those in above already, a config is
// above the ceiling for its losses: the spec stored at, for each path a
// reader loses, named as MinVersion names it (else "what a reader reads").
func lostAbove(lost []convert.Loss, reasons, above []convert.Reason, stored convert.Version) []convert.Reason {
	all, _ := convert.LossReasons(lost, reasons, stored)
	return slices.DeleteFunc(all, func(r convert.Reason) bool {
		return slices.ContainsFunc(above, func(a convert.Reason) bool { return a.Path.String() == r.Path.String() })
	})
}

// readable checks a config of spec declared, needing spec needs, by the
// rules of reads, the newest spec the cluster's machine-config-operator
// reads (zero: not known, the newest any release reads). The operator
// translates every MachineConfig up to that spec and validates it there
// (IgnParseWrapper, then ValidateIgnition): one valid at its own spec but
// not at reads (3.1 requires a merged config's source, 3.3 a link's
// target) stops its render controller, lowered or not, so it is stored as
// written and the writer warned. convert.ParseDeclared checks only the
// declared spec. One that needs more than reads the operator cannot read
// at all: the ceiling's warning is the one for it.
func readable(enc *convert.Encoder, declared, needs, reads convert.Version) error {
	who := "the cluster's machine-config-operator"
	if reads.IsZero() {
		reads, who = releases.NewestSpec(), "OpenShift's machine-config-operator (of the newest release known)"
	}
	if declared == reads || reads.Less(needs) {
		return nil
	}
	if err := enc.Check(reads, declared); err != nil {
		return fmt.Errorf("%s reads spec %s and refuses it: %w", who, reads, err)
	}
	return nil
}

// candidates are the specs to try, lowest first: from what the config
// needs (at least the floor) up to, not including, the spec it declares.
func candidates(need, declared convert.Version) []convert.Version {
	if need.Less(render.DefaultMinSpec) {
		need = render.DefaultMinSpec
	}
	i := slices.Index(convert.OutputVersions, need)
	if i < 0 {
		return nil
	}
	var out []convert.Version
	for _, v := range convert.OutputVersions[i:] {
		if !v.Less(declared) {
			break
		}
		out = append(out, v)
	}
	return out
}

// isEmptyObject reports whether b is a JSON object with no members.
func isEmptyObject(b []byte) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	return len(bytes.TrimSpace(b[1:len(b)-1])) == 0
}
