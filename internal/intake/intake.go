// Package intake turns the YAML and Butane that people write into JSON, keeping the line of every problem.
package intake

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	butane "github.com/coreos/ignition/v2/butane/config"
	butanecommon "github.com/coreos/ignition/v2/butane/config/common"
	fcos "github.com/coreos/ignition/v2/butane/config/fcos/v1_7"
	openshift "github.com/coreos/ignition/v2/butane/config/openshift/v4_22"
	"github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"
	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/internal/text"
)

// YAMLError is a YAML syntax error. Its message is the parser's, with its
// line numbers counted in the file.
type YAMLError struct {
	Line   int // 1-based, in the file; 0 when the parser names none
	Column int // 1-based, of the line's first character; 0 when unknown
	Msg    string
}

func (e *YAMLError) Error() string { return e.Msg }

var yamlLine = regexp.MustCompile(`line (\d+)`)

// YAMLToJSON converts one YAML document (JSON is YAML too) that starts on
// line firstLine of its file. A syntax error is a *YAMLError.
func YAMLToJSON(doc []byte, firstLine int) ([]byte, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err == nil {
		return js, nil
	}
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	ye := &YAMLError{Msg: msg}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		at := problemLine(doc, n, msg)
		ye.Line, ye.Column = at+firstLine-1, firstColumn(doc, at)
		rest := strings.TrimPrefix(strings.TrimPrefix(msg, "yaml: "), m[0]+": ")
		ye.Msg = "yaml: line " + strconv.Itoa(ye.Line) + ": " + rest
		if at != n {
			ye.Msg += fmt.Sprintf(" (inside the block that starts on line %d: check the indentation of line %d)", n+firstLine-1, ye.Line)
		}
	}
	return nil, ye
}

// maxProblemScan bounds how many lines past the one the parser names are
// tried: the error path only, on documents already bounded in size.
const maxProblemScan = 500

// problemLine is the line the mistake is on. The parser names the start of
// the block it was in ("did not find expected key" at a mapping's first
// line), not the line that broke it: that is the first line after which
// the document's beginning fails the same way.
func problemLine(doc []byte, named int, msg string) int {
	want := yamlLine.ReplaceAllString(msg, "")
	lines := strings.SplitAfter(string(doc), "\n")
	if named > len(lines) {
		return len(lines) // an end of input the scanner counts a line past
	}
	for k := max(named, 1); k <= len(lines) && k <= named+maxProblemScan; k++ {
		_, err := yaml.YAMLToJSON([]byte(strings.Join(lines[:k], "")))
		if err != nil && yamlLine.ReplaceAllString(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "), "") == want {
			return k
		}
	}
	return named
}

// firstColumn is the column of line n's first character other than a
// space (1-based), 0 when there is no such line.
func firstColumn(doc []byte, n int) int {
	lines := strings.Split(string(doc), "\n")
	if n < 1 || n > len(lines) {
		return 0
	}
	l := lines[n-1]
	return len(l) - len(strings.TrimLeft(l, " ")) + 1
}

// Problem is one finding in a Butane config.
type Problem struct {
	Path         path.ContextPath // e.g. $.storage.files.0.contnts; the zero path for the whole config
	Line, Column int              // 1-based; 0 when unknown
	Message      string
}

// Where is "line L col C", or "" when the line is unknown.
func (p Problem) Where() string {
	if p.Line == 0 {
		return ""
	}
	return fmt.Sprintf("line %d col %d", p.Line, p.Column)
}

// ButaneError is a Butane config that is invalid, or that Butane would
// translate with a loss. Problems is never empty.
type ButaneError struct {
	Config   string // "openshift 4.14.0"
	Problems []Problem
	Err      error // Butane's error, when it returned one
}

func (e *ButaneError) Error() string {
	s := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		s[i] = p.Message
		if p.Path.Len() > 0 {
			s[i] = p.Path.String() + ": " + s[i]
		}
		if w := p.Where(); w != "" {
			s[i] += " (" + w + ")"
		}
	}
	return "butane " + e.Config + ": " + strings.Join(s, "; ")
}

func (e *ButaneError) Unwrap() error { return e.Err }

// Head is how a Butane config starts; Variant is nil in anything else.
type Head struct {
	Variant  *string `json:"variant"`
	Version  string  `json:"version"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// Name is "variant version", as messages name the config.
func (h Head) Name() string {
	if h.Variant == nil {
		return h.Version
	}
	return *h.Variant + " " + h.Version
}

// ErrUnsupported is a Butane variant or version Butane cannot translate.
var ErrUnsupported = errors.New("unsupported Butane variant or version")

// Butane translates a Butane config (name is its "variant version", for
// messages) with Butane's own translator, under one rule: nothing is lost.
// Butane warns and goes on where it drops a key it does not know (a typo,
// or a newer release's field) and, in raw mode, a field only a MachineConfig
// holds; those are errors here, as fatal findings are. Other warnings are
// returned. An unknown variant or version is ErrUnsupported.
func Butane(name string, data []byte, opts butanecommon.TranslateBytesOptions) ([]byte, []Problem, error) {
	out, rpt, err := butane.TranslateBytes(data, opts)
	var uv butanecommon.ErrUnknownVersion
	if errors.As(err, &uv) || errors.Is(err, butanecommon.ErrInvalidVersion) || errors.Is(err, butanecommon.ErrRhcosVariantUnsupported) {
		return nil, nil, fmt.Errorf("butane %s: %w: %w", name, ErrUnsupported, err)
	}
	var bad, warnings []Problem
	for _, e := range rpt.Entries {
		p := problem(e)
		switch {
		case e.Kind.IsFatal():
			bad = append(bad, p)
		case IsUnusedKey(e.Message):
			p.Message += ": Butane would drop it (a typo, or a newer release's field)"
			if k := text.KeyTypo(butaneSchema(name), "yaml", e.Context.Path); k != "" {
				p.Message += "; did you mean " + k + "?"
			}
			bad = append(bad, p)
		case e.Message == butanecommon.ErrFieldElided.Error():
			p.Message += ": only a MachineConfig holds it"
			bad = append(bad, p)
		default:
			warnings = append(warnings, p)
		}
	}
	if err != nil && len(bad) == 0 {
		bad = append(bad, Problem{Message: err.Error()})
	}
	if len(bad) > 0 {
		return nil, nil, &ButaneError{Config: name, Problems: bad, Err: err}
	}
	return out, warnings, nil
}

// butaneSchema is the Go type of the newest stable release of name's
// variant ("openshift 4.14.0"): what "did you mean" offers keys from (a
// key of a newer release than name's is still the likely meaning).
func butaneSchema(name string) reflect.Type {
	variant, _, _ := strings.Cut(name, " ")
	switch variant {
	case "openshift":
		return reflect.TypeOf(openshift.Config{})
	case "fcos":
		return reflect.TypeOf(fcos.Config{})
	}
	return nil
}

func problem(e report.Entry) Problem {
	p := Problem{Message: e.Message}
	if e.Context.Len() > 0 {
		p.Path = e.Context.Copy()
	}
	if e.Marker.StartP != nil {
		p.Line, p.Column = int(e.Marker.StartP.Line), int(e.Marker.StartP.Column)
	}
	return p
}

// IsUnusedKey recognises Ignition's and Butane's warning for a key the
// parser dropped ("unused key foo"; older releases capitalised it).
func IsUnusedKey(msg string) bool {
	return strings.HasPrefix(strings.ToLower(msg), "unused key")
}
