package convert

import (
	"fmt"
	"reflect"
	"slices"
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
	d.walk(reflect.ValueOf(a), reflect.ValueOf(b))
	return d.out
}

// differ walks two values side by side; at is the path walked to, made a
// Path only where a difference is noted.
type differ struct {
	out []Problem
	at  []any
}

func (d *differ) note(msg string) {
	if len(d.out) < maxDiffs {
		d.out = append(d.out, Problem{Path: NewPath(slices.Clone(d.at)...), Message: msg})
	}
}

// noteAt notes msg at part (a key or an index) below the path walked to.
func (d *differ) noteAt(part any, msg string) {
	d.at = append(d.at, part)
	d.note(msg)
	d.at = d.at[:len(d.at)-1]
}

// walkAt walks a and b, found at part below the path walked to.
func (d *differ) walkAt(part any, a, b reflect.Value) {
	d.at = append(d.at, part)
	d.walk(a, b)
	d.at = d.at[:len(d.at)-1]
}

func (d *differ) walk(a, b reflect.Value) {
	switch a.Kind() {
	case reflect.Ptr:
		switch {
		case a.IsNil() && b.IsNil():
		case b.IsNil():
			d.note("lost " + show(a.Elem()))
		case a.IsNil():
			d.note("added " + show(b.Elem()))
		default:
			d.walk(a.Elem(), b.Elem())
		}
	case reflect.Slice:
		if a.Type().Elem().Implements(keyedType) && !sameKeys(a, b) {
			d.keyed(a, b)
			return
		}
		n := max(a.Len(), b.Len())
		for i := 0; i < n; i++ {
			switch {
			case i >= b.Len():
				d.noteAt(i, "lost")
			case i >= a.Len():
				d.noteAt(i, "added")
			default:
				d.walkAt(i, a.Index(i), b.Index(i))
			}
		}
	case reflect.Struct:
		t := a.Type()
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.Anonymous {
				d.walk(a.Field(i), b.Field(i))
			} else {
				d.walkAt(jsonName(f), a.Field(i), b.Field(i))
			}
		}
	default:
		if a.Interface() != b.Interface() {
			d.note(fmt.Sprintf("changed from %s to %s", show(a), show(b)))
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
func (d *differ) keyed(a, b reflect.Value) {
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
		j, ok := inB[o]
		if !ok {
			d.noteAt(i, "lost "+showKey(k))
			continue
		}
		matched[j] = true
		if j < last {
			inOrder = false
		}
		last = j
		d.walkAt(i, a.Index(i), b.Index(j))
	}
	for j := 0; j < b.Len(); j++ {
		if !matched[j] {
			d.noteAt(j, "added "+showKey(keyOf(b.Index(j))))
		}
	}
	if !inOrder {
		d.note("entries reordered")
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
