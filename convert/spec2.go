package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strconv"

	ign2err "github.com/coreos/ignition/config/shared/errors"
	ign20types "github.com/coreos/ignition/config/v2_0/types"
	ign21 "github.com/coreos/ignition/config/v2_1"
	ign21types "github.com/coreos/ignition/config/v2_1/types"
	ign22 "github.com/coreos/ignition/config/v2_2"
	ign22types "github.com/coreos/ignition/config/v2_2/types"
	ign23 "github.com/coreos/ignition/config/v2_3"
	ign23types "github.com/coreos/ignition/config/v2_3/types"
	ign2 "github.com/coreos/ignition/config/v2_4"
	ign2types "github.com/coreos/ignition/config/v2_4/types"
	ign2validate "github.com/coreos/ignition/config/validate"
	ign2report "github.com/coreos/ignition/config/validate/report"
)

// spec2Types are the Go types of each spec-2 version, to find unknown keys:
// spec 2's parser reports them only as warnings with a line, not a path.
var spec2Types = map[Version]reflect.Type{
	{2, 0, 0}: reflect.TypeFor[ign20types.Config](),
	{2, 1, 0}: reflect.TypeFor[ign21types.Config](),
	{2, 2, 0}: reflect.TypeFor[ign22types.Config](),
	{2, 3, 0}: reflect.TypeFor[ign23types.Config](),
	{2, 4, 0}: reflect.TypeFor[ign2types.Config](),
}

// parseSpec2 reads spec 2.0–2.4 and translates it to spec 3.
func parseSpec2(raw []byte, v Version) (*Parsed, error) {
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, &InvalidError{Version: v, Problems: []Problem{{Message: err.Error()}}}
	}
	var unknown []Problem
	unknownKeys(tree, spec2Types[v], NewPath(), &unknown)
	if len(unknown) > 0 {
		return nil, &InvalidError{Version: v, Problems: unknown}
	}
	cfg, rpt, err := parseSpec2Typed(raw, v)
	if p := typeError(raw, spec2Types[v]); err != nil && p != nil {
		return nil, &InvalidError{Version: v, Problems: []Problem{*p}}
	}
	if err != nil {
		// Spec 2's own parser says where, at a cost that grows with the
		// square of the config's size: it is only asked to explain.
		if _, r, err2 := ign2.Parse(raw); err2 != nil {
			rpt, err = r, err2
		}
		if errors.Is(err, ign2err.ErrUnknownVersion) {
			return nil, &UnsupportedVersionError{Version: v.String()}
		}
		var ps []Problem
		for _, e := range rpt.Entries {
			if e.Kind == ign2report.EntryError {
				ps = append(ps, spec2Problem(raw, e))
			}
		}
		if len(ps) == 0 {
			ps = []Problem{{Message: err.Error()}}
		}
		return nil, &InvalidError{Version: v, Problems: ps}
	}
	c3, err := spec2To3(cfg)
	if err != nil {
		return nil, &InvalidError{Version: v, Problems: reportProblems(err)}
	}
	// What spec 2 allows and spec 3 does not shows here.
	if err := validNewest(c3, v); err != nil {
		return nil, err
	}
	p := &Parsed{Config: c3, Version: v}
	for _, e := range rpt.Entries {
		p.Warnings = append(p.Warnings, spec2Problem(raw, e))
	}
	return p, nil
}

// spec2Problem is a spec-2 report entry at its JSON path: spec 2's parser
// gives only a line and column, and a snippet of the JSON, which is not
// what a MachineConfig's author wrote.
func spec2Problem(raw []byte, e ign2report.Entry) Problem {
	p := Problem{Message: e.Message, Line: e.Line, Column: e.Column}
	if e.Line > 0 {
		p.Path = wholeUnnamed(pathAt(raw, offsetOf(raw, e.Line, e.Column)))
	}
	return p
}

// offsetOf is the byte offset of a 1-based line and column.
func offsetOf(raw []byte, line, col int) int64 {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(raw[off:], '\n')
		if i < 0 {
			return int64(len(raw))
		}
		off += i + 1
	}
	return int64(min(off+max(col-1, 0), len(raw)))
}

var reportLine = regexp.MustCompile(`(?m)\b(?:error|warning) at (\$\S*?): (.*)$`)

// reportProblems reads the paths back out of a report ign-converter
// returned as text.
func reportProblems(err error) []Problem {
	var ps []Problem
	for _, m := range reportLine.FindAllStringSubmatch(err.Error(), -1) {
		ps = append(ps, Problem{Path: ParsePath(m[1]), Message: m[2]})
	}
	if len(ps) == 0 {
		ps = []Problem{{Message: err.Error()}}
	}
	return ps
}

// parseSpec2Typed decodes spec 2.v, validates it with the rules of its own
// version, as spec 2's parser does, and translates it up to 2.4.
func parseSpec2Typed(raw []byte, v Version) (ign2types.Config, ign2report.Report, error) {
	var (
		c20 ign20types.Config
		c21 ign21types.Config
		c22 ign22types.Config
		c23 ign23types.Config
		c24 ign2types.Config
	)
	typed := map[Version]any{{2, 0, 0}: &c20, {2, 1, 0}: &c21, V2_2: &c22, {2, 3, 0}: &c23, {2, 4, 0}: &c24}[v]
	if err := json.Unmarshal(raw, typed); err != nil {
		return c24, ign2report.Report{}, err
	}
	rpt := ign2validate.ValidateWithoutSource(reflect.ValueOf(typed).Elem())
	if rpt.IsFatal() {
		return c24, rpt, ign2err.ErrInvalid
	}
	switch v.Minor {
	case 0:
		c21 = ign21.TranslateFromV2_0(c20)
		fallthrough
	case 1:
		c22 = ign22.TranslateFromV2_1(c21)
		fallthrough
	case 2:
		c23 = ign23.Translate(c22)
		fallthrough
	case 3:
		c24 = ign2.Translate(c23)
	}
	return c24, rpt, nil
}

// unknownKeys walks decoded JSON along a config type and lists every object
// key no field is tagged with.
func unknownKeys(v any, t reflect.Type, at Path, out *[]Problem) {
	for t.Kind() == reflect.Ptr {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				*out = append(*out, Problem{Path: at.Append(k), Message: "unknown key " + strconv.Quote(k)})
				continue
			}
			unknownKeys(obj[k], ft, at.Append(k), out)
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range arr {
			unknownKeys(e, t.Elem(), at.Append(i), out)
		}
	}
}

// jsonFields maps JSON names to field types, with embedded structs' fields
// promoted as encoding/json promotes them.
func jsonFields(t reflect.Type, into map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			ft := f.Type
			if ft.Kind() == reflect.Ptr {
				ft = ft.Elem()
			}
			jsonFields(ft, into)
			continue
		}
		into[jsonName(f)] = f.Type
	}
}
