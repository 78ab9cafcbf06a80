package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	butanecommon "github.com/coreos/ignition/v2/butane/config/common"

	"github.com/ignition-mcs/mcs/internal/intake"
)

// parseYAML reads Butane (YAML with a variant). YAML without a variant that
// holds an Ignition object is read as that object.
func parseYAML(raw []byte) (*Parsed, error) {
	js, err := intake.YAMLToJSON(raw, 1)
	if err != nil {
		var ye *intake.YAMLError
		errors.As(err, &ye)
		return nil, &SyntaxError{Format: "YAML", Line: ye.Line, Offset: -1, Msg: ye.Msg}
	}
	var head intake.Head
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, &InvalidError{Problems: []Problem{{Path: NewPath(), Message: "not an Ignition or Butane config: " + err.Error()}}}
	}
	if head.Variant == nil {
		if bytes.HasPrefix(bytes.TrimSpace(js), []byte("{")) {
			return Parse(js)
		}
		return nil, &InvalidError{Problems: []Problem{{Path: NewPath(), Message: "not an Ignition or Butane config"}}}
	}
	// In raw mode the openshift variant drops what only a MachineConfig
	// holds (kernel arguments, extensions, FIPS, kernel type): intake
	// refuses that as it refuses unknown keys.
	name := head.Name()
	out, warnings, err := intake.Butane(name, raw, butanecommon.TranslateBytesOptions{Raw: true})
	if errors.Is(err, intake.ErrUnsupported) {
		return nil, &UnsupportedVersionError{Version: name, Butane: true}
	}
	var be *intake.ButaneError
	if errors.As(err, &be) {
		return nil, &InvalidError{Problems: butaneProblems(name, be.Problems)}
	}
	p, err := Parse(out)
	if err != nil {
		return nil, fmt.Errorf("butane %s: %w", name, err)
	}
	p.Butane = name
	p.Warnings = append(p.Warnings, butaneProblems(name, warnings)...)
	return p, nil
}

func butaneProblems(name string, in []intake.Problem) []Problem {
	out := make([]Problem, len(in))
	for i, p := range in {
		out[i] = Problem{Path: Path{p.Path}, Message: "butane " + name + ": " + p.Message}
		if w := p.Where(); w != "" {
			out[i].Message += " (" + w + ")"
		}
	}
	return out
}
