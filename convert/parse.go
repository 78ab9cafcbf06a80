package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	ignerr "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/v3_0"
	"github.com/coreos/ignition/v2/config/v3_1"
	"github.com/coreos/ignition/v2/config/v3_2"
	"github.com/coreos/ignition/v2/config/v3_3"
	"github.com/coreos/ignition/v2/config/v3_4"
	"github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/ignition/v2/config/validate"
	"github.com/coreos/vcontext/report"

	"github.com/ignition-mcs/mcs/internal/intake"
)

// Config is the internal form of every config: the newest stable spec's types.
type Config = types.Config

// Parsed is a config read by Parse, in the newest spec's types.
type Parsed struct {
	Config   Config
	Version  Version   // the spec the input declared (for Butane: the spec Butane emitted)
	Butane   string    // "variant version" when the input was Butane, else ""
	Warnings []Problem // non-fatal findings from Ignition's or Butane's validation
	// WrittenModes are the directory modes parsing masked (specs before 3.6).
	WrittenModes WrittenModes
	// declared is the config as Ignition's own parser of its spec read it
	// (a value of that spec's types.Config), before convert's steps up: a
	// spec-3 reader of that spec reads exactly this. Nil but for spec 3.
	declared any
}

// Parse reads an Ignition config of any supported spec (JSON), or a Butane
// config (YAML with a variant), validates it and translates it up to the newest
// spec. Unknown keys are errors, not warnings: a parser that drops a field it
// does not know (kernelArguments in a config labelled 3.2.0) loses content.
func Parse(raw []byte) (*Parsed, error) { return parse(raw, true, true) }

// ParseDeclared is Parse without checking a config of an older spec against
// the newest spec's rules as well: for a caller that writes the config only
// at its declared spec or below (the encoder validates what it writes at
// that spec), where the newest spec's rules are no reader's. It saves one
// of the parse's two Ignition validations.
func ParseDeclared(raw []byte) (*Parsed, error) { return parse(raw, false, true) }

// parse is Parse, ParseDeclared without checkNewest, and with quick, trying
// quickVersion's way first.
func parse(raw []byte, checkNewest, quick bool) (*Parsed, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, &InvalidError{Problems: []Problem{{Message: "empty config"}}}
	}
	if trimmed[0] != '{' {
		return parseYAML(raw)
	}
	// Most configs are spec 3 with a plain version: found without decoding,
	// and parsed by their spec's parser, which decodes and checks all of it
	// (the version too). Anything else, or any error, takes the way below,
	// which says why as it always has.
	if vs, ok := quickVersion(raw); ok && quick {
		if v, err := ParseVersion(vs); err == nil && v.Major == 3 && contains(inputVersions, v) && v.String() == vs {
			if p, err := parseSpec3(raw, v, vs, checkNewest); err == nil {
				return p, nil
			}
		}
	}
	var stub struct {
		Ignition struct {
			Version *string `json:"version"`
		} `json:"ignition"`
	}
	// One pass both checks the syntax and finds the version.
	if err := json.Unmarshal(raw, &stub); err != nil {
		if se := jsonSyntax(raw, err); se != nil {
			return nil, se
		}
		// The body is valid JSON, so this is a type mismatch at the top.
		p := Problem{Path: NewPath("ignition"), Message: err.Error()}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			p.Path = ParsePath(te.Field)
			p.Message, p.Stopped = typeMistake(te, p.Path), true
			if te.Field == "ignition.version" {
				// YAML reads version: 3.2 as a number.
				p.Message = fmt.Sprintf("the version is a %s, not a string: write all three parts, quoted in YAML (version: \"3.2.0\"); supported versions are %s", te.Value, VersionList(inputVersions))
			}
		}
		return nil, &InvalidError{Problems: []Problem{p}}
	}
	if stub.Ignition.Version == nil {
		return nil, &UnsupportedVersionError{}
	}
	vs := *stub.Ignition.Version
	v, err := ParseVersion(vs)
	if err != nil || !contains(inputVersions, v) || v.String() != vs {
		return nil, &UnsupportedVersionError{Version: vs}
	}
	if v.Major == 2 {
		p, err := parseSpec2(raw, v)
		if err == nil {
			p.keepWrittenModes(raw)
		}
		return p, err
	}
	return parseSpec3(raw, v, vs, checkNewest)
}

// parseSpec3 is parse of a config declaring spec 3 version v (written vs).
// Each spec is parsed by its own parser and brought up by upFrom rather
// than by Ignition's ParseCompatibleVersion, whose 3.4→3.5 step loses tang
// advertisements (see up34to35).
func parseSpec3(raw []byte, v Version, vs string, checkNewest bool) (*Parsed, error) {
	typed, rpt, err := spec3Parsers[v](raw)
	if err != nil {
		if errors.Is(err, ignerr.ErrUnknownVersion) {
			return nil, &UnsupportedVersionError{Version: vs}
		}
		if p := typeError(raw, reflect.TypeOf(typed)); p != nil {
			return nil, &InvalidError{Version: v, Problems: []Problem{*p}}
		}
		return nil, &InvalidError{Version: v, Problems: nameDuplicates(raw, problems(rpt, err))}
	}
	p := &Parsed{Version: v, declared: typed}
	if err := p.takeWarnings(rpt); err != nil {
		return nil, err
	}
	if p.Config, err = upFrom(v, typed); err != nil {
		return nil, err
	}
	if v != Newest && checkNewest {
		if err := validNewest(p.Config, v); err != nil {
			return nil, err
		}
	}
	p.keepWrittenModes(raw)
	return p, nil
}

// validNewest checks the internal form against the newest spec's rules.
// Newer specs tightened some (3.1 requires a merged config's source, 3.3 a
// link's target and a custom Clevis pin), and a config the newest spec
// refuses could not be written for the clients that read it.
func validNewest(c Config, declared Version) error {
	r := validate.ValidateWithContext(c, nil)
	if !r.IsFatal() {
		return nil
	}
	return &InvalidError{Version: declared, Problems: validOnlyIn(problems(r, nil), declared, Newest)}
}

// validOnlyIn says of each problem that it is one in spec v, not in spec
// declared.
func validOnlyIn(ps []Problem, declared, v Version) []Problem {
	for i := range ps {
		ps[i].Message = "valid in spec " + declared.String() + " but not in " + v.String() + ": " + ps[i].Message
	}
	return ps
}

func parser[T any](parse func([]byte) (T, report.Report, error)) func([]byte) (any, report.Report, error) {
	return func(raw []byte) (any, report.Report, error) {
		c, r, err := parse(raw)
		return c, r, err
	}
}

// spec3Parsers parse exactly one spec version each.
var spec3Parsers = map[Version]func([]byte) (any, report.Report, error){
	V3_0: parser(v3_0.Parse),
	V3_1: parser(v3_1.Parse),
	V3_2: parser(v3_2.Parse),
	V3_3: parser(v3_3.Parse),
	V3_4: parser(v3_4.Parse),
	V3_5: parser(v3_5.Parse),
	V3_6: parser(v3_6.Parse),
}

// takeWarnings keeps warnings but turns unknown keys into an error.
func (p *Parsed) takeWarnings(rpt report.Report) error {
	var unknown []Problem
	for _, e := range rpt.Entries {
		pr := Problem{Path: NewPath(e.Context.Path...), Message: e.Message}
		if intake.IsUnusedKey(e.Message) {
			pr.Message = fmt.Sprintf("unknown key in spec %s (a newer spec's field, or a typo): %s", p.Version, e.Message)
			if k := keySuggestion(e.Context.Path); k != "" {
				pr.Message += "; did you mean " + k + "?"
			}
			unknown = append(unknown, pr)
			continue
		}
		if e.Kind.IsFatal() {
			unknown = append(unknown, pr)
			continue
		}
		p.Warnings = append(p.Warnings, pr)
	}
	if len(unknown) > 0 {
		// Ignition finds a struct's unused keys in map order: sorted, the
		// same config gets the same message every time.
		slices.SortStableFunc(unknown, func(a, b Problem) int { return strings.Compare(a.Path.String(), b.Path.String()) })
		return &InvalidError{Version: p.Version, Problems: unknown}
	}
	return nil
}

func problems(rpt report.Report, err error) []Problem {
	var out []Problem
	for _, e := range rpt.Entries {
		if !e.Kind.IsFatal() {
			continue
		}
		pr := Problem{Path: wholeUnnamed(NewPath(e.Context.Path...)), Message: e.Message}
		if e.Marker.StartP != nil {
			pr.Line, pr.Column = int(e.Marker.StartP.Line), int(e.Marker.StartP.Column)
		}
		out = append(out, pr)
	}
	if len(out) == 0 && err != nil {
		out = append(out, Problem{Message: err.Error()})
	}
	return out
}
