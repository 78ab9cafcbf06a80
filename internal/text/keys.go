package text

import (
	"reflect"
	"strings"
)

// KeyTypo is the key a person most likely meant by the last element of
// path, an unknown key, as Closest finds it among the keys of the object
// holding it: the object is found by walking t (a config's Go type) along
// path by the field names its tag gives ("json" for Ignition, "yaml" for
// Butane), so the keys offered never drift from the schema. "" when none
// is near or path leaves t.
func KeyTypo(t reflect.Type, tag string, path []any) string {
	if len(path) == 0 || t == nil {
		return ""
	}
	last := reflect.ValueOf(path[len(path)-1])
	if last.Kind() != reflect.String {
		return ""
	}
	// Paths hold strings and ints, some of named types.
	for _, el := range path[:len(path)-1] {
		t = deref(t)
		switch v := reflect.ValueOf(el); v.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			if t.Kind() != reflect.Slice {
				return ""
			}
			t = t.Elem()
		case reflect.String:
			f, ok := field(t, tag, v.String())
			if !ok {
				return ""
			}
			t = f
		default:
			return ""
		}
	}
	return Closest(last.String(), keys(deref(t), tag))
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// tagName is a field's name under tag, and whether it is embedded
// (anonymous without a name: its fields are flattened, as encoding/json
// and yaml's ",inline" do).
func tagName(f reflect.StructField, tag string) (name string, flatten bool) {
	name, opts, _ := strings.Cut(f.Tag.Get(tag), ",")
	if f.Anonymous && name == "" && (f.Tag.Get(tag) == "" || strings.Contains(opts, "inline")) {
		return "", true
	}
	return name, false
}

// field is the type of t's field named key under tag.
func field(t reflect.Type, tag, key string) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, flatten := tagName(f, tag)
		if flatten {
			if ft, ok := field(deref(f.Type), tag, key); ok {
				return ft, true
			}
			continue
		}
		if name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// keys are the names of t's fields under tag, embedded structs flattened.
func keys(t reflect.Type, tag string) []string {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, flatten := tagName(f, tag)
		if flatten {
			out = append(out, keys(deref(f.Type), tag)...)
			continue
		}
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
