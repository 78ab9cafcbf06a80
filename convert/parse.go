package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	v24tov31 "github.com/coreos/ign-converter/translate/v24tov31"
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
	butane "github.com/coreos/ignition/v2/butane/config"
	butanecommon "github.com/coreos/ignition/v2/butane/config/common"
	ignerr "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/v3_0"
	"github.com/coreos/ignition/v2/config/v3_1"
	t31 "github.com/coreos/ignition/v2/config/v3_1/types"
	"github.com/coreos/ignition/v2/config/v3_2"
	"github.com/coreos/ignition/v2/config/v3_3"
	"github.com/coreos/ignition/v2/config/v3_4"
	"github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/ignition/v2/config/validate"
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
		p := Problem{Path: "$.ignition", Message: err.Error()}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			p.Path = "$." + te.Field
			p.Message = fmt.Sprintf("want a %s, not a JSON %s", te.Type, te.Value)
		}
		return nil, &InvalidError{Problems: []Problem{p}}
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
	// Each spec is parsed by its own parser and brought up by upFrom rather
	// than by Ignition's ParseCompatibleVersion, whose 3.4→3.5 step loses
	// tang advertisements (see up34to35).
	typed, rpt, err := spec3Parsers[v](raw)
	if err != nil {
		if errors.Is(err, ignerr.ErrUnknownVersion) {
			return nil, &UnsupportedVersionError{Version: vs}
		}
		if p := typeError(raw, reflect.TypeOf(typed)); p != nil {
			return nil, &InvalidError{Version: v, Problems: []Problem{*p}}
		}
		return nil, &InvalidError{Version: v, Problems: problems(rpt, err)}
	}
	p := &Parsed{Version: v}
	if err := p.takeWarnings(rpt); err != nil {
		return nil, err
	}
	if p.Config, err = upFrom(v, typed); err != nil {
		return nil, err
	}
	if v != Newest {
		if err := validNewest(p.Config, v); err != nil {
			return nil, err
		}
	}
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
	ps := problems(r, nil)
	for i := range ps {
		ps[i].Message = "valid in spec " + declared.String() + " but not in " + Newest.String() + ": " + ps[i].Message
	}
	return &InvalidError{Version: declared, Problems: ps}
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
		pr := Problem{Path: e.Context.String(), Message: e.Message}
		if isUnusedKey(e.Message) {
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

// isUnusedKey recognises Ignition's and Butane's warning for a key the
// parser dropped ("unused key foo"; older releases capitalised it).
func isUnusedKey(msg string) bool {
	return strings.HasPrefix(strings.ToLower(msg), "unused key")
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

// jsonSyntax turns a JSON syntax error into one with a line and column, and
// returns nil for any other error.
func jsonSyntax(raw []byte, err error) *SyntaxError {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(raw, se.Offset)
		return &SyntaxError{Format: "JSON", Line: line, Column: col, Offset: se.Offset, Msg: se.Error()}
	}
	return nil
}

// lineCol turns a byte offset into a 1-based line and column (in bytes).
func lineCol(raw []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(raw)))
	before := raw[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

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
	unknownKeys(tree, spec2Types[v], "$", &unknown)
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
		return nil, &InvalidError{Version: v, Problems: reportProblems(err)}
	}
	// What spec 2 allows and spec 3 does not shows here.
	if err := validNewest(c3, v); err != nil {
		return nil, err
	}
	p := &Parsed{Config: c3, Version: v}
	for _, e := range rpt.Entries {
		p.Warnings = append(p.Warnings, Problem{Message: e.String()})
	}
	return p, nil
}

// typeError finds a JSON value of the wrong type for t and says where.
// Ignition's parsers give only a line and column for it.
func typeError(raw []byte, t reflect.Type) *Problem {
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal(raw, reflect.New(t).Interface()); !errors.As(err, &te) {
		return nil
	}
	return &Problem{Path: pathAt(raw, te.Offset), Message: fmt.Sprintf("want a %s, not a JSON %s", te.Type, te.Value)}
}

// pathAt returns the JSON path of the innermost value that ends at or
// contains the byte offset off.
func pathAt(raw []byte, off int64) string {
	type frame struct {
		obj, wantKey bool
		key          string
		idx          int
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		b.WriteString("$")
		for _, f := range stack {
			if f.obj {
				b.WriteString("." + f.key)
			} else {
				fmt.Fprintf(&b, ".%d", f.idx)
			}
		}
		return b.String()
	}
	next := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].obj {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].idx++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "$"
		}
		hit := start < off && off <= dec.InputOffset()
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			if key, ok := tok.(string); ok {
				stack[n-1].key, stack[n-1].wantKey = key, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if hit {
				return path()
			}
			stack = append(stack, frame{obj: tok == json.Delim('{'), wantKey: tok == json.Delim('{')})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if hit {
				return path()
			}
			next()
		default:
			if hit {
				return path()
			}
			next()
		}
	}
}

var reportLine = regexp.MustCompile(`(?m)\b(?:error|warning) at (\$\S*?): (.*)$`)

// reportProblems reads the paths back out of a report ign-converter
// returned as text.
func reportProblems(err error) []Problem {
	var ps []Problem
	for _, m := range reportLine.FindAllStringSubmatch(err.Error(), -1) {
		ps = append(ps, Problem{Path: m[1], Message: m[2]})
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
func unknownKeys(v any, t reflect.Type, at string, out *[]Problem) {
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
				*out = append(*out, Problem{Path: at + "." + k, Message: "unknown key " + strconv.Quote(k)})
				continue
			}
			unknownKeys(obj[k], ft, at+"."+k, out)
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range arr {
			unknownKeys(e, t.Elem(), fmt.Sprintf("%s.%d", at, i), out)
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

// spec2To3 translates spec 2.4 types to the newest spec. Files name their
// filesystem in spec 2; "root" is "/", and a filesystem with a path (or one
// named by its mount point, as spec-2 output of Translate names them) maps
// there. Spec 2 allows repeated files, units and users, applied in order on
// the node; spec 3 does not, so they are folded into one entry each.
func spec2To3(cfg ign2types.Config) (Config, error) {
	fsMap := map[string]string{"root": "/"}
	used := map[string]bool{}
	for _, f := range cfg.Storage.Files {
		used[f.Filesystem] = true
	}
	for _, d := range cfg.Storage.Directories {
		used[d.Filesystem] = true
	}
	for _, l := range cfg.Storage.Links {
		used[l.Filesystem] = true
	}
	for _, fs := range cfg.Storage.Filesystems {
		switch {
		case fs.Path != nil:
			fsMap[fs.Name] = *fs.Path
		case strings.HasPrefix(fs.Name, "/"):
			fsMap[fs.Name] = fs.Name
		case !used[fs.Name]:
			// Formatted but never written to: spec 3 leaves its path unset.
			fsMap[fs.Name] = ""
		}
	}
	// Spec 2.0–2.2 count partition sizes in sectors of the disk's logical
	// size, which spec 3 cannot express; 0 means "the default" in both.
	// Spec 2.3 and 2.4 deprecated them, and v24tov31 refuses them.
	cfg.Storage.Disks = slices.Clone(cfg.Storage.Disks)
	for i, d := range cfg.Storage.Disks {
		parts := slices.Clone(d.Partitions)
		for j := range parts {
			for _, f := range []struct {
				name string
				v    **int
			}{{"size", &parts[j].Size}, {"start", &parts[j].Start}} {
				switch {
				case *f.v == nil:
				case **f.v == 0:
					*f.v = nil
				default:
					// Worded as a report, so that reportProblems finds the path.
					return Config{}, fmt.Errorf("error at $.storage.disks.%d.partitions.%d.%s: %d sectors: spec 3 counts MiB, and the sector size is the disk's", i, j, f.name, **f.v)
				}
			}
		}
		cfg.Storage.Disks[i].Partitions = parts
	}
	files, appends := foldSpec2Files(cfg.Storage.Files, fsMap)
	cfg.Storage.Files = files
	cfg.Systemd.Units = foldSpec2Units(cfg.Systemd.Units)
	cfg.Passwd.Users = foldSpec2Users(cfg.Passwd.Users)
	// v24tov31 points every merged config and CA at its loop variable's
	// source (its module predates Go 1.22's loop variables), so all of them
	// get the last one's: they are translated here instead.
	merges, cas := cfg.Ignition.Config.Append, cfg.Ignition.Security.TLS.CertificateAuthorities
	cfg.Ignition.Config.Append, cfg.Ignition.Security.TLS.CertificateAuthorities = nil, nil
	c31, err := v24tov31.Translate(cfg, fsMap)
	if err != nil {
		return Config{}, fmt.Errorf("translating spec 2 to 3.1.0: %w", err)
	}
	for _, m := range merges {
		c31.Ignition.Config.Merge = append(c31.Ignition.Config.Merge, t31.Resource{
			Source:       new(m.Source),
			Verification: t31.Verification{Hash: m.Verification.Hash},
			HTTPHeaders:  spec2Headers(m.HTTPHeaders),
		})
	}
	for _, ca := range cas {
		c31.Ignition.Security.TLS.CertificateAuthorities = append(c31.Ignition.Security.TLS.CertificateAuthorities, t31.Resource{
			Source:       new(ca.Source),
			Verification: t31.Verification{Hash: ca.Verification.Hash},
			HTTPHeaders:  spec2Headers(ca.HTTPHeaders),
		})
	}
	for i, later := range appends {
		f := &c31.Storage.Files[i]
		for _, a := range later {
			f.Append = append(f.Append, t31.Resource{
				Compression:  strPtr(a.Contents.Compression),
				Source:       &a.Contents.Source,
				HTTPHeaders:  spec2Headers(a.Contents.HTTPHeaders),
				Verification: t31.Verification{Hash: a.Contents.Verification.Hash},
			})
			// Each append sets the file's mode and owner when it names them.
			if a.Mode != nil {
				f.Mode = a.Mode
			}
			if a.User != nil {
				f.User = t31.NodeUser{ID: a.User.ID, Name: strPtr(a.User.Name)}
			}
			if a.Group != nil {
				f.Group = t31.NodeGroup{ID: a.Group.ID, Name: strPtr(a.Group.Name)}
			}
		}
	}
	return upFrom(V3_1, c31)
}

// foldSpec2Files keeps one entry per file, where its path first appears: the
// last write of it (a later write replaces earlier contents and appends), or
// its first append when it is never written. appends[i] lists the appends
// that follow entry i, which v24tov31 cannot express (one source per entry).
func foldSpec2Files(in []ign2types.File, fsMap map[string]string) (out []ign2types.File, appends [][]ign2types.File) {
	at := map[string]int{}
	for _, f := range in {
		key := f.Filesystem + ":" + f.Path
		if m, ok := fsMap[f.Filesystem]; ok {
			key = path.Join("/", m, f.Path)
		}
		i, seen := at[key]
		switch {
		case !seen:
			at[key] = len(out)
			out = append(out, f)
			appends = append(appends, nil)
		case f.Append:
			appends[i] = append(appends[i], f)
		default:
			out[i], appends[i] = f, nil
		}
	}
	return out, appends
}

// foldSpec2Units keeps one entry per unit where it first appears. Ignition
// v0.x applies repeats in order and skips empty contents, so the last
// non-empty contents and the last enabled setting win, a mask stays, and
// drop-ins accumulate by name.
func foldSpec2Units(in []ign2types.Unit) []ign2types.Unit {
	var out []ign2types.Unit
	at := map[string]int{}
	for _, u := range in {
		i, seen := at[u.Name]
		if !seen {
			at[u.Name] = len(out)
			out = append(out, u)
			continue
		}
		o := &out[i]
		if u.Contents != "" {
			o.Contents = u.Contents
		}
		if u.Enabled != nil {
			o.Enabled = u.Enabled
		}
		if u.Enable {
			o.Enable = true
		}
		o.Mask = o.Mask || u.Mask
		o.Dropins = append([]ign2types.SystemdDropin(nil), o.Dropins...)
		for _, d := range u.Dropins {
			j := slices.IndexFunc(o.Dropins, func(x ign2types.SystemdDropin) bool { return x.Name == d.Name })
			switch {
			case j < 0:
				o.Dropins = append(o.Dropins, d)
			case d.Contents != "":
				o.Dropins[j] = d
			}
		}
	}
	return out
}

// foldSpec2Users keeps one entry per user where it first appears, with the
// last entry's fields and every entry's SSH keys, as the MCO folds them.
func foldSpec2Users(in []ign2types.PasswdUser) []ign2types.PasswdUser {
	var out []ign2types.PasswdUser
	at := map[string]int{}
	for _, u := range in {
		i, seen := at[u.Name]
		if !seen {
			at[u.Name] = len(out)
			out = append(out, u)
			continue
		}
		keys := slices.Clone(out[i].SSHAuthorizedKeys)
		for _, k := range u.SSHAuthorizedKeys {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		out[i] = u
		out[i].SSHAuthorizedKeys = keys
	}
	return out
}

func spec2Headers(hs ign2types.HTTPHeaders) t31.HTTPHeaders {
	var out t31.HTTPHeaders
	for _, h := range hs {
		out = append(out, t31.HTTPHeader{Name: h.Name, Value: strPtr(h.Value)})
	}
	return out
}

// strPtr maps "" to nil, as ign-converter does for spec 2's plain strings.
func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
