package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/text"
)

// API group and kinds of the objects this package reads and writes.
const (
	APIVersion = "machineconfiguration.openshift.io/v1"

	KindMachineConfig     = "MachineConfig"
	KindMachineConfigPool = "MachineConfigPool"
	kindControllerConfig  = "ControllerConfig"

	// roleLabel selects MachineConfigs into the default pools and decides
	// the merge order (role worker first).
	roleLabel = "machineconfiguration.openshift.io/role"

	// Annotations upstream's renderer writes on rendered configs, and the
	// one its template controllers write on the configs they generate.
	AnnotationGeneratedByController = "machineconfiguration.openshift.io/generated-by-controller-version"
	AnnotationReleaseImageVersion   = "machineconfiguration.openshift.io/release-image-version"
	annotationOSImageURLOverridden  = "machineconfiguration.openshift.io/os-image-url-overridden"
	// AnnotationControllerConfigVersion is on the ControllerConfig.
	AnnotationControllerConfigVersion = "machineconfiguration.openshift.io/generated-by-version"
)

// The JSON forms below keep every field they do not model (Extra) and write
// them back after the known ones, sorted by key, so re-serialising an object
// loses nothing and is deterministic.

// MarshalJSON writes known fields in API order, then Extra.
func (m MachineConfig) MarshalJSON() ([]byte, error) {
	var w objWriter
	w.str("apiVersion", m.APIVersion)
	w.str("kind", m.Kind)
	w.value("metadata", m.Metadata)
	w.value("spec", m.Spec)
	w.extra(m.Extra)
	return w.done()
}

// MarshalRendered is MarshalJSON's bytes for a rendered MachineConfig (a
// Result's, with metadata added): its spec.config, the renderer's own JSON
// (convert.Encoded, compact and HTML-escaped), is written as it is, where
// MarshalJSON checks, compacts and escapes it again, passes over a config
// that can be megabytes; the controller writes one per pool.
func (m MachineConfig) MarshalRendered() ([]byte, error) {
	spec, err := m.Spec.marshal(true)
	if err != nil {
		return nil, fmt.Errorf("encoding spec: %w", err)
	}
	var w objWriter
	w.str("apiVersion", m.APIVersion)
	w.str("kind", m.Kind)
	w.value("metadata", m.Metadata)
	w.key("spec")
	w.buf.Write(spec)
	w.extra(m.Extra)
	return w.done()
}

// UnmarshalJSON reads known fields and keeps the rest in Extra.
func (m *MachineConfig) UnmarshalJSON(b []byte) error {
	*m = MachineConfig{Source: m.Source, Locals: m.Locals}
	return decodeObject(b, convert.NewPath(), &m.Extra, map[string]fieldDecoder{
		"apiVersion": into(&m.APIVersion),
		"kind":       into(&m.Kind),
		"metadata":   m.Metadata.decode,
		"spec":       m.Spec.decode,
	})
}

// MarshalJSON writes name, labels and annotations, then Extra.
func (o ObjectMeta) MarshalJSON() ([]byte, error) {
	var w objWriter
	w.str("name", o.Name)
	if len(o.Labels) > 0 {
		w.value("labels", o.Labels)
	}
	if len(o.Annotations) > 0 {
		w.value("annotations", o.Annotations)
	}
	w.extra(o.Extra)
	return w.done()
}

// UnmarshalJSON reads known fields and keeps the rest in Extra.
func (o *ObjectMeta) UnmarshalJSON(b []byte) error { return o.decode(b, convert.NewPath()) }

func (o *ObjectMeta) decode(b []byte, at convert.Path) error {
	*o = ObjectMeta{}
	return decodeObject(b, at, &o.Extra, map[string]fieldDecoder{
		"name":        into(&o.Name),
		"labels":      into(&o.Labels),
		"annotations": into(&o.Annotations),
	})
}

// MarshalJSON writes every field upstream's API writes (none is omitted
// there either), then Extra. An absent config is null.
func (s MachineConfigSpec) MarshalJSON() ([]byte, error) { return s.marshal(false) }

// marshal writes the spec; escaped, it writes the config as it is (see
// MarshalRendered) and escapes the rest as json.Marshal would: the bytes
// MarshalJSON's caller would end with.
func (s MachineConfigSpec) marshal(escaped bool) ([]byte, error) {
	w := objWriter{escaped: escaped}
	w.str("osImageURL", s.OSImageURL)
	w.str("baseOSExtensionsContainerImage", s.BaseOSExtensionsContainerImage)
	switch {
	case len(s.Config) == 0:
		w.raw("config", []byte("null"))
	case escaped:
		w.key("config")
		w.buf.Write(s.Config)
	default:
		w.raw("config", s.Config)
	}
	w.value("kernelArguments", s.KernelArguments)
	w.value("extensions", s.Extensions)
	w.value("fips", s.FIPS)
	w.str("kernelType", s.KernelType)
	w.extra(s.Extra)
	return w.done()
}

// UnmarshalJSON reads known fields and keeps the rest in Extra.
func (s *MachineConfigSpec) UnmarshalJSON(b []byte) error { return s.decode(b, convert.NewPath()) }

func (s *MachineConfigSpec) decode(b []byte, at convert.Path) error {
	*s = MachineConfigSpec{}
	return decodeObject(b, at, &s.Extra, map[string]fieldDecoder{
		"osImageURL":                     into(&s.OSImageURL),
		"baseOSExtensionsContainerImage": into(&s.BaseOSExtensionsContainerImage),
		"config": func(v []byte, _ convert.Path) error {
			if t := bytes.TrimSpace(v); !bytes.Equal(t, []byte("null")) {
				s.Config = slices.Clone(t)
			}
			return nil
		},
		"kernelArguments": into(&s.KernelArguments),
		"extensions":      into(&s.Extensions),
		"fips":            into(&s.FIPS),
		"kernelType":      into(&s.KernelType),
	})
}

// fieldDecoder decodes the value v of the field at path at.
type fieldDecoder func(v []byte, at convert.Path) error

func into[T any](p *T) fieldDecoder {
	return func(v []byte, at convert.Path) error { return decodeField(v, p, at) }
}

// decodeObject reads the object b at path at: each known field with its
// decoder, every other into extra.
func decodeObject(b []byte, at convert.Path, extra *map[string]json.RawMessage, known map[string]fieldDecoder) error {
	fields, err := objectFields(b, at)
	if err != nil {
		return err
	}
	for k, v := range fields {
		dec, ok := known[k]
		if !ok {
			*extra = setExtra(*extra, k, v)
			continue
		}
		if err := dec(v, at.Append(k)); err != nil {
			return err
		}
	}
	return nil
}

// MachineConfigPool is machineconfiguration.openshift.io/v1
// MachineConfigPool; only what rendering needs is modelled.
type MachineConfigPool struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Metadata   ObjectMeta            `json:"metadata"`
	Spec       MachineConfigPoolSpec `json:"spec"`

	Source string `json:"-"`
}

// MachineConfigPoolSpec selects the pool's MachineConfigs and its OS
// image stream.
type MachineConfigPoolSpec struct {
	MachineConfigSelector *LabelSelector          `json:"machineConfigSelector,omitempty"`
	NodeSelector          *LabelSelector          `json:"nodeSelector,omitempty"`
	OSImageStream         *OSImageStreamReference `json:"osImageStream,omitempty"`
}

// fieldError is a decoding problem at a JSON path inside one object.
type fieldError struct {
	Path convert.Path
	Msg  string
}

func (e *fieldError) Error() string { return e.Path.String() + ": " + e.Msg }

// objectFields splits a JSON object into its members. Duplicate keys are
// refused: which one a reader keeps differs between tools.
func objectFields(b []byte, at convert.Path) (map[string]json.RawMessage, error) {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil, nil // Kubernetes reads null as the zero value
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, &fieldError{at, "invalid JSON: " + err.Error()}
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, &fieldError{at, fmt.Sprintf("want an object, got %s", describeToken(tok))}
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, &fieldError{at, "invalid JSON: " + err.Error()}
		}
		k := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, &fieldError{at.Append(k), "invalid JSON: " + err.Error()}
		}
		if _, dup := out[k]; dup {
			return nil, &fieldError{at.Append(k), "duplicate key"}
		}
		out[k] = v
	}
	return out, nil
}

func describeToken(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		if v == '[' {
			return "a list"
		}
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", t)
}

// decodeField decodes one member, naming its path on a type mismatch.
// A null leaves the zero value, as Kubernetes reads it.
func decodeField(v json.RawMessage, into any, at convert.Path) error {
	if err := json.Unmarshal(v, into); err != nil {
		var te *json.UnmarshalTypeError
		if ok := asType(err, &te); ok {
			p := at
			if te.Field != "" {
				p = at.Append(convert.ParsePath(te.Field).Path...)
			}
			return &fieldError{p, fmt.Sprintf("want %s, got a JSON %s", goKind(te.Type.String()), te.Value)}
		}
		return &fieldError{at, err.Error()}
	}
	return nil
}

func asType(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

func goKind(t string) string {
	switch t {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "[]string":
		return "a list of strings"
	case "map[string]string":
		return "a map of strings"
	}
	return t
}

func setExtra(m map[string]json.RawMessage, k string, v json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m[k] = slices.Clone(v)
	return m
}

// objWriter writes one JSON object member by member.
type objWriter struct {
	buf bytes.Buffer
	err error
	// escaped: raw values are HTML-escaped too, as json.Marshal escapes
	// what a Marshaler returns.
	escaped bool
}

func (w *objWriter) key(k string) {
	if w.buf.Len() == 0 {
		w.buf.WriteByte('{')
	} else {
		w.buf.WriteByte(',')
	}
	kb, _ := json.Marshal(k)
	w.buf.Write(kb)
	w.buf.WriteByte(':')
}

func (w *objWriter) str(k, v string) { w.value(k, v) }

func (w *objWriter) value(k string, v any) {
	if w.err != nil {
		return
	}
	var b []byte
	var err error
	ours := false
	switch v := v.(type) {
	case ObjectMeta:
		b, err = v.MarshalJSON()
		ours = true
	case MachineConfigSpec:
		b, err = v.MarshalJSON()
		ours = true
	default:
		b, err = json.Marshal(v)
	}
	if err != nil {
		w.err = fmt.Errorf("encoding %s: %w", k, err)
		return
	}
	w.key(k)
	if ours {
		// objWriter's own JSON is compact: json.Marshal would check it and
		// compact it again, two passes over a config that can be
		// megabytes; only its HTML escaping is left to do.
		json.HTMLEscape(&w.buf, b)
		return
	}
	w.buf.Write(b)
}

// raw writes b, which must be JSON; it is compacted so the object is valid
// whatever whitespace the input carried.
func (w *objWriter) raw(k string, b []byte) {
	if w.err != nil {
		return
	}
	w.key(k)
	if !w.escaped {
		if err := json.Compact(&w.buf, b); err != nil {
			w.err = fmt.Errorf("encoding %s: %w", k, err)
		}
		return
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		w.err = fmt.Errorf("encoding %s: %w", k, err)
		return
	}
	json.HTMLEscape(&w.buf, c.Bytes())
}

func (w *objWriter) extra(m map[string]json.RawMessage) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w.raw(k, m[k])
	}
}

func (w *objWriter) done() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.buf.Len() == 0 {
		return []byte("{}"), nil
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes(), nil
}

// The fields a MachineConfig may hold beyond those this package models:
// status at the top, and metadata's (Kubernetes' ObjectMeta). Its spec has
// no others (openshift/api's MachineConfigSpec).
var (
	knownTop  = []string{"apiVersion", "kind", "metadata", "spec", "status"}
	knownMeta = []string{"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
		"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
		"ownerReferences", "finalizers", "managedFields"}
	knownSpec = []string{"osImageURL", "baseOSExtensionsContainerImage", "config", "kernelArguments", "extensions", "fips", "kernelType"}
	// A MachineConfigPool's spec (openshift/api's MachineConfigPoolSpec);
	// render reads the selectors and the stream, the rest is the node
	// controllers'.
	knownPoolSpec = []string{"machineConfigSelector", "nodeSelector", "paused", "maxUnavailable", "configuration", "pinnedImageSets", "osImageStream"}
)

// poolUnknownFields are the JSON paths of the fields a MachineConfigPool
// holds (js, decoded as p) that openshift/api's has not, sorted.
func poolUnknownFields(js []byte, p *MachineConfigPool) []convert.Path {
	var raw struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	top := map[string]json.RawMessage{}
	if json.Unmarshal(js, &top) != nil || json.Unmarshal(js, &raw) != nil {
		return nil // decodePool said why
	}
	return unknownIn([]fieldSet{{"", top, knownTop}, {"metadata", p.Metadata.Extra, knownMeta}, {"spec", raw.Spec, knownPoolSpec}})
}

// fieldSet is an object's fields at a path ("": the top), and those its
// kind has.
type fieldSet struct {
	at    string
	extra map[string]json.RawMessage
	known []string
}

// unknownFields are the JSON paths of the fields m holds that
// MachineConfig has not (a typo such as spec.kernelArgs), sorted.
func (m *MachineConfig) unknownFields() []convert.Path {
	return unknownIn([]fieldSet{{"", m.Extra, knownTop}, {"metadata", m.Metadata.Extra, knownMeta}, {"spec", m.Spec.Extra, knownSpec}})
}

// unknownIn are the paths of the fields of sets their kind has not, sorted.
func unknownIn(sets []fieldSet) []convert.Path {
	var out []convert.Path
	for _, f := range sets {
		for k := range f.extra {
			if slices.Contains(f.known, k) {
				continue
			}
			if f.at == "" {
				out = append(out, convert.NewPath(k))
			} else {
				out = append(out, convert.NewPath(f.at, k))
			}
		}
	}
	slices.SortFunc(out, func(a, b convert.Path) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// unknownFieldMessage says what an unknown field at path of an object of
// kind is, what its object holds, and the field it was likely meant to be.
func unknownFieldMessage(kind string, path convert.Path) string {
	parts := path.Parts()
	name := parts[len(parts)-1]
	spec := knownSpec
	if kind == KindMachineConfigPool {
		spec = knownPoolSpec
	}
	list, holds := knownTop, "a "+kind+" holds only apiVersion, kind, metadata, spec and status"
	switch {
	case len(parts) > 1 && parts[0] == "metadata":
		list, holds = knownMeta, "a "+kind+"'s metadata holds name, labels, annotations and Kubernetes' other ObjectMeta fields"
	case len(parts) > 1 && parts[0] == "spec":
		list, holds = spec, "a "+kind+"'s spec holds only "+strings.Join(spec[:len(spec)-1], ", ")+" and "+spec[len(spec)-1]
	}
	msg := "unknown field " + name
	if m := text.Closest(name, list); m != "" {
		msg += " (did you mean " + m + "?)"
	}
	return msg + ": " + holds + "; refused rather than dropped with what it holds"
}
