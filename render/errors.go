package render

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ignition-mcs/mcs/convert"

	"github.com/ignition-mcs/mcs/internal/text"
)

// Sentinels for errors.Is; the typed errors carry the details.
var (
	ErrInvalid       = errors.New("invalid input")
	ErrSpecCeiling   = errors.New("config needs a spec above the ceiling")
	ErrUnknownPool   = errors.New("unknown pool")
	ErrNoConfigs     = errors.New("pool selects no MachineConfigs")
	errDuplicateName = errors.New("duplicate name")
)

// Error is one problem with one object, located the way CI logs and editors
// want it: "file: object: $.path: message", or "file:line: ..." where the
// line is known.
type Error struct {
	File    string       // where the object was read from; may be empty
	Line    int          // 1-based line in File; 0 when unknown
	Column  int          // 1-based column of Line; 0 when unknown
	Object  string       // "MachineConfig/99-worker-ssh", "MachineConfigPool/worker"
	Path    convert.Path // inside the object: $ for the whole object; none where unknown
	Message string
	Err     error // the cause, for errors.Is and errors.As; may be nil
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" && e.Line > 0 && e.Column > 0 {
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Column)
	} else if e.File != "" && e.Line > 0 {
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	} else if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	for _, s := range []string{e.Object, e.Path.String()} {
		if s != "" {
			b.WriteString(s)
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Message)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem found in one pass, so a CI run shows them all at once.
type Errors struct {
	List []*Error
}

// Error prints one problem per line.
func (e *Errors) Error() string {
	s := make([]string, len(e.List))
	for i, x := range e.List {
		s[i] = x.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap exposes each problem to errors.Is and errors.As.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(e.List))
	for i, x := range e.List {
		out[i] = x
	}
	return out
}

func (e *Errors) add(x ...*Error) { e.List = append(e.List, x...) }

// orNil returns e as an error, or an untyped nil when it holds nothing, so
// callers can compare the result with nil.
func (e *Errors) orNil() error {
	if e == nil || len(e.List) == 0 {
		return nil
	}
	return e
}

// specCeilingError is a pool whose content needs a newer spec than the
// ceiling allows (--max-spec, or the forced --spec). Reasons lists every
// field above the ceiling with the MachineConfig it came from.
type specCeilingError struct {
	Pool    string
	Ceiling convert.Version
	Needs   convert.Version
	Reasons []Reason
}

func (e *specCeilingError) Error() string {
	s := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		s[i] = r.describe()
	}
	return fmt.Sprintf("pool %s needs spec %s, above the ceiling %s: %s", e.Pool, e.Needs, e.Ceiling, strings.Join(s, "; "))
}

func (e *specCeilingError) Is(target error) bool { return target == ErrSpecCeiling }

// lines turns the ceiling error into one located problem per field.
func (e *specCeilingError) lines() []*Error {
	out := make([]*Error, len(e.Reasons))
	for i, r := range e.Reasons {
		out[i] = &Error{
			File:   r.Source,
			Line:   r.Line,
			Column: r.Column,
			Object: "MachineConfig/" + r.MachineConfig,
			Path:   r.ConfigPath,
			Message: fmt.Sprintf("%s need%s spec %s, above the ceiling %s of pool %s (rendered path %s)%s",
				r.What, text.VerbS(r.What), r.Version, e.Ceiling, e.Pool, r.Path, ceilingRemedy(r.Path)),
			Err: e,
		}
	}
	return out
}

// ceilingRemedy says what to do about a field above the ceiling where there
// is a way other than raising it: kernel arguments to add can be the
// MachineConfig's own spec.kernelArguments, which every spec carries.
func ceilingRemedy(p convert.Path) string {
	if strings.HasPrefix(p.String(), "$.kernelArguments.shouldExist") {
		return ": raise the ceiling, or move the arguments to the MachineConfig's spec.kernelArguments"
	}
	if strings.HasPrefix(p.String(), "$.kernelArguments.shouldNotExist") {
		return ": raise the ceiling (spec.kernelArguments only adds arguments)"
	}
	return ""
}
