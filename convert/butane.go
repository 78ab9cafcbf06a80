package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	butane "github.com/coreos/ignition/v2/butane/config"
	butanecommon "github.com/coreos/ignition/v2/butane/config/common"
	"sigs.k8s.io/yaml"
)

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlError keeps the line the YAML parser names; it names no column.
func yamlError(err error) error {
	se := &SyntaxError{Format: "YAML", Offset: -1, Msg: strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")}
	if m := yamlLine.FindStringSubmatch(se.Msg); m != nil {
		se.Line, _ = strconv.Atoi(m[1])
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
	name := *head.Variant + " " + head.Version
	out, rpt, err := butane.TranslateBytes(raw, butanecommon.TranslateBytesOptions{Raw: true})
	var uv butanecommon.ErrUnknownVersion
	if errors.As(err, &uv) || errors.Is(err, butanecommon.ErrInvalidVersion) || errors.Is(err, butanecommon.ErrRhcosVariantUnsupported) {
		return nil, &UnsupportedVersionError{Version: name, Butane: true}
	}
	if err != nil || rpt.IsFatal() {
		ps := problems(rpt, err)
		for i := range ps {
			ps[i].Message = "butane " + name + ": " + ps[i].Message
		}
		return nil, &InvalidError{Problems: ps}
	}
	// Butane drops what it does not know, and in raw mode the openshift
	// variant drops what only a MachineConfig holds (kernel arguments,
	// extensions, FIPS, kernel type): both would lose content.
	var dropped, warnings []Problem
	for _, e := range rpt.Entries {
		pr := Problem{Path: e.Context.String(), Message: "butane " + name + ": " + e.Message}
		if isUnusedKey(e.Message) || e.Message == butanecommon.ErrFieldElided.Error() {
			dropped = append(dropped, pr)
			continue
		}
		warnings = append(warnings, pr)
	}
	if len(dropped) > 0 {
		return nil, &InvalidError{Problems: dropped}
	}
	p, err := Parse(out)
	if err != nil {
		return nil, fmt.Errorf("butane %s: %w", name, err)
	}
	p.Butane = name
	p.Warnings = append(p.Warnings, warnings...)
	return p, nil
}
