// Package admit stores every MachineConfig at the lowest Ignition spec able to express it, losslessly, as a mutating admission webhook beside OpenShift's own controllers.
package admit

import (
	"bytes"
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
}

// Changed reports whether Config differs from the input.
func (r *Result) Changed() bool { return r.Stored != r.Declared }

// Why a config passes unchanged; bounded, for metric labels.
const (
	PassSpec2      = "spec2"      // spec 2: OpenShift converts it itself
	PassInvalid    = "invalid"    // it does not parse (or not strictly)
	PassRefused    = "refused"    // it parses; the cluster's operator refuses it at its newer spec
	PassUnprovable = "unprovable" // no lower spec proved lossless
)

// PassError is a config Lower leaves as it is, and why. Lower's Result then
// holds the input unchanged.
type PassError struct {
	Kind string // PassSpec2, PassInvalid, PassRefused or PassUnprovable
	Err  error
}

func (e *PassError) Error() string {
	switch e.Kind {
	case PassSpec2, PassRefused:
		return "stored as written: " + e.Err.Error()
	case PassUnprovable:
		return "stored as written: no lower spec could be proven lossless: " + e.Err.Error()
	}
	return "stored as written: it does not parse: " + e.Err.Error()
}

func (e *PassError) Unwrap() error { return e.Err }

// Lower re-encodes an Ignition config (a MachineConfig's spec.config) at
// the lowest spec able to express it, never below render.DefaultMinSpec,
// the floor every OpenShift release since 4.6 reads. Each translation is
// proven lossless by the converter (translated back up, it must equal the
// input), else the next spec up is tried; the input's own spec is never
// exceeded. ceiling (zero: none) does not change what is stored: Above
// lists the fields that need more than it, for the caller to warn or
// refuse. An empty config ("", {} or null) is kept as it is. A config that
// is spec 2, does not parse, or has no provably lossless lower spec is kept
// byte for byte with a *PassError saying why, and so is one that OpenShift's
// machine-config-operator refuses though it is valid at its own spec
// (PassRefused, see readable). Same input, same bytes.
func Lower(raw []byte, ceiling convert.Version) (*Result, error) {
	return lower(raw, ceiling, convert.Version{}, nil)
}

// lower is Lower where the cluster's machine-config-operator reads spec
// reads (zero: not known), validating each spec it writes through valid
// (nil: alone), which reviews share: a new rendered config repeats most
// files and units of the one before it.
func lower(raw []byte, ceiling, reads convert.Version, valid *convert.ValidItems) (*Result, error) {
	res := &Result{Config: raw}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) || isEmptyObject(trimmed) {
		return res, nil
	}
	if trimmed[0] != '{' {
		return res, &PassError{Kind: PassInvalid, Err: errors.New("not a JSON object")}
	}
	parsed, err := convert.ParseDeclared(raw)
	if err != nil {
		return res, &PassError{Kind: PassInvalid, Err: err}
	}
	res.Declared, res.Stored = parsed.Version, parsed.Version
	if parsed.Version.Major != 3 {
		return res, &PassError{Kind: PassSpec2, Err: fmt.Errorf("it is spec %s, which OpenShift translates itself; the webhook rewrites spec 3 only", parsed.Version)}
	}
	enc := convert.NewEncoder(parsed.Config, false).Written(parsed.WrittenModes).Validating(valid)
	res.Needs, res.Reasons = enc.MinVersion()
	if !ceiling.IsZero() {
		res.Above = convert.ReasonsAbove(res.Reasons, ceiling)
	}
	if err := readable(enc, parsed.Version, res.Needs, reads); err != nil {
		return res, &PassError{Kind: PassRefused, Err: err}
	}
	var first error
	for _, v := range candidates(res.Needs, parsed.Version) {
		out, err := enc.Encode(v, nil)
		if err == nil {
			res.Config, res.Stored = out.JSON, v
			return res, nil
		}
		if first == nil {
			first = fmt.Errorf("spec %s: %w", v, err)
		}
	}
	if first != nil {
		return res, &PassError{Kind: PassUnprovable, Err: first}
	}
	return res, nil
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
