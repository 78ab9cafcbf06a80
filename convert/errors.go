package convert

import (
	"fmt"
	"strings"
)

// UnsupportedVersionError is a version Parse cannot read or translate cannot write.
type UnsupportedVersionError struct {
	Version string
	Output  bool // the version was asked for as an output
	Butane  bool // Version is a Butane "variant version" Butane has no translator for
}

func (e *UnsupportedVersionError) Error() string {
	if e.Butane {
		return fmt.Sprintf("unsupported Butane variant and version %q: Butane's stable variants and versions are read when they produce a supported spec version: %s", e.Version, VersionList(inputVersions))
	}
	if e.Output {
		return fmt.Sprintf("cannot write spec version %q: supported output versions are %s", e.Version, VersionList(OutputVersions))
	}
	if e.Version == "" {
		return fmt.Sprintf("config has no ignition.version: supported versions are %s (or Butane with a variant)", VersionList(inputVersions))
	}
	return fmt.Sprintf("unsupported spec version %q: supported versions are %s", e.Version, VersionList(inputVersions))
}

// SyntaxError locates malformed JSON or YAML.
type SyntaxError struct {
	Format string // "JSON" or "YAML"
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Offset int64  // byte offset; -1 when unknown
	Msg    string
}

func (e *SyntaxError) Error() string {
	var where []string
	switch {
	case e.Line > 0 && e.Column > 0:
		where = append(where, fmt.Sprintf("line %d, column %d", e.Line, e.Column))
	case e.Line > 0:
		where = append(where, fmt.Sprintf("line %d", e.Line))
	}
	if e.Offset >= 0 {
		where = append(where, fmt.Sprintf("offset %d", e.Offset))
	}
	if len(where) == 0 {
		return fmt.Sprintf("invalid %s: %s", e.Format, e.Msg)
	}
	return fmt.Sprintf("invalid %s at %s: %s", e.Format, strings.Join(where, ", "), e.Msg)
}

// Problem is one finding at a JSON path, e.g. $.storage.files.0.path (the
// zero Path: the whole config, not named).
type Problem struct {
	Path    Path
	Message string
	// Line and Column place it in the JSON given to Parse (1-based; 0 when
	// unknown). A config embedded in a MachineConfig is JSON the loader
	// made, so there its Path is what leads to the user's line.
	Line, Column int
	// Stopped: a value of the wrong type, where decoding stopped; what
	// follows it was not read.
	Stopped bool
}

func (p Problem) String() string {
	s := p.Message
	if p.Line > 0 {
		s += fmt.Sprintf(" (line %d col %d)", p.Line, p.Column)
	}
	if p.Path.IsZero() {
		return s
	}
	return p.Path.String() + ": " + s
}

// InvalidError is a config that parses but fails Ignition's validation.
type InvalidError struct {
	Version  Version
	Problems []Problem
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("invalid spec %s config: %s", e.Version, joinProblems(e.Problems))
}

func joinProblems(ps []Problem) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}

// CannotExpressError lists every field that needs a newer spec than Target.
type CannotExpressError struct {
	Target  Version
	Reasons []Reason
}

func (e *CannotExpressError) Error() string {
	s := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		s[i] = r.String()
	}
	return fmt.Sprintf("spec %s cannot express this config: %s", e.Target, strings.Join(s, "; "))
}

// lossError is a translation step whose output, translated back up, differs
// from its input: the step would have dropped or changed these paths.
type lossError struct {
	Target Version
	Step   string // e.g. "3.5.0→3.4.0", or "" when the whole chain was checked
	Diffs  []Problem
}

func (e *lossError) Error() string {
	return fmt.Sprintf("translation to spec %s is not lossless: %s", e.Target, joinProblems(e.Diffs))
}
