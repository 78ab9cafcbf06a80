package convert

import (
	"reflect"
	"sync"
)

// ParseDeclaredValid is ParseDeclared of a spec-3 JSON config, reading it
// as Ignition's parser of its spec does (its decode, its version), but
// validating it through valid, a file or unit at a time, kept by content
// (see readValid), and finding keys the spec does not have by a walk of
// the JSON along the spec's types, where the parser builds a tree of the
// whole config for its unused-key check: a review's input repeats most
// files and units of the one before. Warnings are not collected. A config
// that does not pass so, or a nil valid, is parsed by ParseDeclared, which
// says what is wrong.
func ParseDeclaredValid(raw []byte, valid *ValidItems) (*Parsed, error) {
	v, ok := QuickVersion(raw)
	r, known := ignitionReaders[v]
	if valid == nil || !ok || !known || !contains(inputVersions, v) {
		return ParseDeclared(raw)
	}
	c, err := r.decode(raw)
	if err != nil || reflect.ValueOf(c).FieldByName("Ignition").FieldByName("Version").String() != v.String() ||
		!knownKeys(raw, reflect.TypeOf(c)) {
		return ParseDeclared(raw)
	}
	// The validation reads c alone: it runs beside the steps up.
	passed := beside(func() bool { return valid.Passes(c) })
	p := &Parsed{Version: v, declared: c}
	p.Config, err = upFrom(v, c)
	if err == nil {
		p.keepWrittenModes(raw)
	}
	if !passed() {
		return ParseDeclared(raw)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// knownKeys reports whether every key of every JSON object in raw that
// decodes into a struct of type t, or of the types below it (through
// pointers and lists), is exactly the JSON name of one of its fields:
// what Ignition's unused-key check (config/validate.ValidateUnusedKeys)
// finds no fault with; encoding/json would have taken a key that matches
// a field only when case is folded. False wherever it is not certain.
func knownKeys(raw []byte, t reflect.Type) bool {
	s := scanner{b: raw}
	return s.known(t)
}

// known reads one value of type t, checking its objects' keys.
func (s *scanner) known(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if s.skipNull() {
			return true
		}
		fields := knownFields(t)
		return s.object(func(key string) bool {
			ft, ok := fields[key]
			return ok && s.known(ft)
		})
	case reflect.Slice:
		if s.skipNull() {
			return true
		}
		return s.array(func() bool { return s.known(t.Elem()) })
	}
	return s.skip()
}

var knownFieldsOf sync.Map // reflect.Type → map[string]reflect.Type

// knownFields is jsonFields of struct type t, kept.
func knownFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := knownFieldsOf.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	jsonFields(t, m)
	knownFieldsOf.Store(t, m)
	return m
}
