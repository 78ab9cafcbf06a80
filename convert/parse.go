package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	v24tov31 "github.com/coreos/ign-converter/translate/v24tov31"
	ign2err "github.com/coreos/ignition/config/shared/errors"
	ign2 "github.com/coreos/ignition/config/v2_4"
	ign2types "github.com/coreos/ignition/config/v2_4/types"
	ign2report "github.com/coreos/ignition/config/validate/report"
	butane "github.com/coreos/ignition/v2/butane/config"
	butanecommon "github.com/coreos/ignition/v2/butane/config/common"
	ignerr "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/vcontext/report"
	"sigs.k8s.io/yaml"
)

// Config is the internal form of every config: the newest stable spec's types.
type Config = types.Config

// Parsed is a config read by Parse, in the newest spec's types.
type Parsed struct {
	Config   Config
	Version  Version   // the spec the input declared (for Butane: the spec Butane emitted)
	Butane   string    // "variant version" when the input was Butane, else ""
	Warnings []Problem // non-fatal findings from Ignition's or Butane's validation
}

// Parse reads an Ignition config of any supported spec (JSON), or a Butane
// config (YAML with a variant), validates it and translates it up to the newest
// spec. Unknown keys are errors, not warnings: a parser that drops a field it
// does not know (kernelArguments in a config labelled 3.2.0) loses content.
func Parse(raw []byte) (*Parsed, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, &InvalidError{Problems: []Problem{{Message: "empty config"}}}
	}
	if trimmed[0] != '{' {
		return parseYAML(raw)
	}
	if err := checkJSON(raw); err != nil {
		return nil, err
	}
	var stub struct {
		Ignition struct {
			Version *string `json:"version"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(raw, &stub); err != nil {
		// The body is valid JSON, so this is a type mismatch at the top.
		return nil, &InvalidError{Problems: []Problem{{Path: "$.ignition.version", Message: err.Error()}}}
	}
	if stub.Ignition.Version == nil {
		return nil, &UnsupportedVersionError{}
	}
	vs := *stub.Ignition.Version
	v, err := ParseVersion(vs)
	if err != nil || !contains(InputVersions, v) || v.String() != vs {
		return nil, &UnsupportedVersionError{Version: vs}
	}
	if v.Major == 2 {
		return parseSpec2(raw, v)
	}
	cfg, rpt, err := v3_6.ParseCompatibleVersion(raw)
	if err != nil {
		if errors.Is(err, ignerr.ErrUnknownVersion) {
			return nil, &UnsupportedVersionError{Version: vs}
		}
		return nil, &InvalidError{Version: v, Problems: problems(rpt, err)}
	}
	p := &Parsed{Config: cfg, Version: v}
	if err := p.takeWarnings(rpt); err != nil {
		return nil, err
	}
	return p, nil
}

// takeWarnings keeps warnings but turns unknown keys into an error.
func (p *Parsed) takeWarnings(rpt report.Report) error {
	var unknown []Problem
	for _, e := range rpt.Entries {
		pr := Problem{Path: e.Context.String(), Message: e.Message}
		if strings.HasPrefix(e.Message, "Unused key") {
			pr.Message = fmt.Sprintf("unknown key in spec %s (a newer spec's field, or a typo): %s", p.Version, e.Message)
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
		pr := Problem{Path: e.Context.String(), Message: e.Message}
		if pr.Path == "$" {
			pr.Path = ""
		}
		if e.Marker.StartP != nil {
			pr.Message = fmt.Sprintf("%s (%s)", pr.Message, e.Marker.String())
		}
		out = append(out, pr)
	}
	if len(out) == 0 && err != nil {
		out = append(out, Problem{Message: err.Error()})
	}
	return out
}

// checkJSON turns a JSON syntax error into one with a line and column.
func checkJSON(raw []byte) error {
	var v any
	err := json.Unmarshal(raw, &v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(raw, se.Offset)
		return &SyntaxError{Format: "JSON", Line: line, Column: col, Offset: se.Offset, Msg: se.Error()}
	}
	return &SyntaxError{Format: "JSON", Offset: -1, Msg: err.Error()}
}

func lineCol(raw []byte, off int64) (line, col int) {
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	before := raw[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func yamlError(err error) error {
	se := &SyntaxError{Format: "YAML", Offset: -1, Msg: strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")}
	if m := yamlLine.FindStringSubmatch(se.Msg); m != nil {
		se.Line, _ = strconv.Atoi(m[1])
		se.Column = 1
	}
	return se
}

// parseYAML reads Butane (YAML with a variant). YAML without a variant that
// holds an Ignition object is read as that object.
func parseYAML(raw []byte) (*Parsed, error) {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, yamlError(err)
	}
	var head struct {
		Variant *string `json:"variant"`
		Version string  `json:"version"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, &InvalidError{Problems: []Problem{{Path: "$", Message: "not an Ignition or Butane config: " + err.Error()}}}
	}
	if head.Variant == nil {
		if bytes.HasPrefix(bytes.TrimSpace(js), []byte("{")) {
			return Parse(js)
		}
		return nil, &InvalidError{Problems: []Problem{{Path: "$", Message: "not an Ignition or Butane config"}}}
	}
	out, rpt, err := butane.TranslateBytes(raw, butanecommon.TranslateBytesOptions{Raw: true})
	name := *head.Variant + " " + head.Version
	if err != nil || rpt.IsFatal() {
		ps := problems(rpt, err)
		for i := range ps {
			ps[i].Message = "butane " + name + ": " + ps[i].Message
		}
		return nil, &InvalidError{Problems: ps}
	}
	p, err := Parse(out)
	if err != nil {
		return nil, fmt.Errorf("butane %s: %w", name, err)
	}
	p.Butane = name
	for _, e := range rpt.Entries {
		p.Warnings = append(p.Warnings, Problem{Path: e.Context.String(), Message: e.Message})
	}
	return p, nil
}

// parseSpec2 reads spec 2.0–2.4 and translates it to spec 3. Spec 2 allows
// duplicate files, units and users (the last one wins on the node); spec 3
// does not, so duplicates are resolved the way Ignition v0.x applied them.
func parseSpec2(raw []byte, v Version) (*Parsed, error) {
	cfg, rpt, err := ign2.Parse(raw)
	if err != nil {
		if errors.Is(err, ign2err.ErrUnknownVersion) {
			return nil, &UnsupportedVersionError{Version: v.String()}
		}
		var ps []Problem
		for _, e := range rpt.Entries {
			if e.Kind == ign2report.EntryError {
				ps = append(ps, Problem{Message: e.String()})
			}
		}
		if len(ps) == 0 {
			ps = []Problem{{Message: err.Error()}}
		}
		return nil, &InvalidError{Version: v, Problems: ps}
	}
	c3, err := spec2To3(cfg)
	if err != nil {
		return nil, &InvalidError{Version: v, Problems: []Problem{{Message: err.Error()}}}
	}
	p := &Parsed{Config: c3, Version: v}
	for _, e := range rpt.Entries {
		p.Warnings = append(p.Warnings, Problem{Message: e.String()})
	}
	return p, nil
}

// spec2To3 translates spec 2.4 types to the newest spec. Files name their
// filesystem in spec 2; "root" is "/", and a filesystem with a path (or one
// named by its mount point, as spec-2 output of Translate names them) maps there.
func spec2To3(cfg ign2types.Config) (Config, error) {
	cfg, err := v24tov31.RemoveDuplicateFilesUnitsUsers(cfg)
	if err != nil {
		return Config{}, err
	}
	fsMap := map[string]string{"root": "/"}
	for _, fs := range cfg.Storage.Filesystems {
		switch {
		case fs.Path != nil:
			fsMap[fs.Name] = *fs.Path
		case strings.HasPrefix(fs.Name, "/"):
			fsMap[fs.Name] = fs.Name
		}
	}
	c31, err := v24tov31.Translate(cfg, fsMap)
	if err != nil {
		return Config{}, fmt.Errorf("translating spec 2 to 3.1.0: %w", err)
	}
	return upFrom(V3_1, c31)
}
