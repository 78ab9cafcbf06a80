package convert

import (
	"reflect"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/ignition-mcs/mcs/internal/text"
)

// keySuggestion is the key of the newest spec an unknown key at path is a
// typo of ("" when none is near): the keys offered are those of the object
// holding it, read from Ignition's own types so they never drift from the
// spec.
func keySuggestion(path []any) string {
	if len(path) == 0 {
		return ""
	}
	last := reflect.ValueOf(path[len(path)-1])
	if last.Kind() != reflect.String {
		return ""
	}
	t := reflect.TypeOf(types.Config{})
	// Ignition's paths hold strings and ints, some of named types.
	for _, el := range path[:len(path)-1] {
		t = derefType(t)
		switch v := reflect.ValueOf(el); v.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			if t.Kind() != reflect.Slice {
				return ""
			}
			t = t.Elem()
		case reflect.String:
			f, ok := jsonField(t, v.String())
			if !ok {
				return ""
			}
			t = f
		default:
			return ""
		}
	}
	return text.Closest(last.String(), jsonKeys(derefType(t)))
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonField is the type of t's field with JSON name key, embedded structs
// flattened as encoding/json does.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" {
			if ft, ok := jsonField(derefType(f.Type), key); ok {
				return ft, true
			}
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// jsonKeys are the JSON names of t's fields, embedded structs flattened.
func jsonKeys(t reflect.Type) []string {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" {
			out = append(out, jsonKeys(derefType(f.Type))...)
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
