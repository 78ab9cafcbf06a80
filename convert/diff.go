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
// Order counts everywhere: merged configs and file appends apply in order, and
// no translation step has a reason to reorder anything.
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
		if a.Type().Elem().Implements(keyedType) && !sameKeys(a, b) {
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
// users and so on are keyed by path or name.
type keyed interface{ Key() string }

var keyedType = reflect.TypeFor[keyed]()

func keyOf(v reflect.Value) string { return v.Interface().(keyed).Key() }

func sameKeys(a, b reflect.Value) bool {
	if a.Len() != b.Len() {
		return false
	}
	for i := 0; i < a.Len(); i++ {
		if keyOf(a.Index(i)) != keyOf(b.Index(i)) {
			return false
		}
	}
	return true
}

// keyed reports a keyed list whose entries were lost, added or moved: entries
// are matched by key and, as keys may repeat (file appends, unlabelled
// partitions), by how often the key occurred before, so that a lost entry
// is reported once rather than shifting every later one.
func (d *differ) keyed(a, b reflect.Value, path string) {
	type occurrence struct {
		key string
		n   int
	}
	inB := make(map[occurrence]int, b.Len())
	seen := make(map[string]int, b.Len())
	for j := 0; j < b.Len(); j++ {
		k := keyOf(b.Index(j))
		inB[occurrence{k, seen[k]}] = j
		seen[k]++
	}
	clear(seen)
	matched := make([]bool, b.Len())
	inOrder, last := true, -1
	for i := 0; i < a.Len(); i++ {
		k := keyOf(a.Index(i))
		o := occurrence{k, seen[k]}
		seen[k]++
		p := fmt.Sprintf("%s.%d", path, i)
		j, ok := inB[o]
		if !ok {
			d.note(p, "lost "+showKey(k))
			continue
		}
		matched[j] = true
		if j < last {
			inOrder = false
		}
		last = j
		d.walk(a.Index(i), b.Index(j), p)
	}
	for j := 0; j < b.Len(); j++ {
		if !matched[j] {
			d.note(fmt.Sprintf("%s.%d", path, j), "added "+showKey(keyOf(b.Index(j))))
		}
	}
	if !inOrder {
		d.note(path, "entries reordered")
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

// showKey prints an entry's key: a path or name as is, but a resource's key is
// its source, and a data URL is the file's contents.
func showKey(k string) string {
	switch {
	case strings.HasPrefix(k, "data:"):
		return fmt.Sprintf("a %d-byte data URL", len(k))
	case len(k) > 120:
		return fmt.Sprintf("%q…", k[:120])
	}
	return fmt.Sprintf("%q", k)
}
