package convert

import (
	"fmt"
	"reflect"
	"strings"
)

// maxDiffs bounds a loss report: a config that loses everything need not list it all.
const maxDiffs = 50

// diff compares two values of one config type and returns the JSON paths at
// which they differ. A nil slice equals an empty one (both marshal to nothing);
// a nil pointer does not equal a pointer to a zero value (unset is not false).
func diff(a, b any) []Problem {
	d := differ{}
	d.walk(reflect.ValueOf(a), reflect.ValueOf(b), "$")
	return d.out
}

type differ struct{ out []Problem }

func (d *differ) note(path, msg string) {
	if len(d.out) < maxDiffs {
		d.out = append(d.out, Problem{Path: path, Message: msg})
	}
}

func (d *differ) walk(a, b reflect.Value, path string) {
	switch a.Kind() {
	case reflect.Ptr:
		switch {
		case a.IsNil() && b.IsNil():
		case b.IsNil():
			d.note(path, "lost "+show(a.Elem()))
		case a.IsNil():
			d.note(path, "added "+show(b.Elem()))
		default:
			d.walk(a.Elem(), b.Elem(), path)
		}
	case reflect.Slice:
		if a.Type().Elem().Implements(keyedType) {
			d.keyed(a, b, path)
			return
		}
		n := max(a.Len(), b.Len())
		for i := 0; i < n; i++ {
			p := fmt.Sprintf("%s.%d", path, i)
			switch {
			case i >= b.Len():
				d.note(p, "lost")
			case i >= a.Len():
				d.note(p, "added")
			default:
				d.walk(a.Index(i), b.Index(i), p)
			}
		}
	case reflect.Struct:
		t := a.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			p := path
			if !f.Anonymous {
				p = path + "." + jsonName(f)
			}
			d.walk(a.Field(i), b.Field(i), p)
		}
	default:
		if a.Interface() != b.Interface() {
			d.note(path, fmt.Sprintf("changed from %s to %s", show(a), show(b)))
		}
	}
}

// keyed is what Ignition's list entries with identity implement: files, units,
// users and so on are keyed by path or name, and their order carries no meaning
// in spec 3 (duplicates are invalid), so they are matched by key.
type keyed interface{ Key() string }

var keyedType = reflect.TypeFor[keyed]()

func (d *differ) keyed(a, b reflect.Value, path string) {
	inB := make(map[string]int, b.Len())
	for j := 0; j < b.Len(); j++ {
		inB[b.Index(j).Interface().(keyed).Key()] = j
	}
	seen := make(map[string]bool, a.Len())
	for i := 0; i < a.Len(); i++ {
		k := a.Index(i).Interface().(keyed).Key()
		seen[k] = true
		p := fmt.Sprintf("%s.%d", path, i)
		if j, ok := inB[k]; ok {
			d.walk(a.Index(i), b.Index(j), p)
		} else {
			d.note(p, fmt.Sprintf("lost %q", k))
		}
	}
	for j := 0; j < b.Len(); j++ {
		if k := b.Index(j).Interface().(keyed).Key(); !seen[k] {
			d.note(path, fmt.Sprintf("added %q", k))
		}
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// show prints a scalar briefly. Strings can be file contents, password hashes
// or tokens, so only their length is shown.
func show(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return fmt.Sprintf("a %d-byte string", v.Len())
	case reflect.Int, reflect.Int64:
		return fmt.Sprint(v.Int())
	case reflect.Bool:
		return fmt.Sprint(v.Bool())
	default:
		return "value"
	}
}
