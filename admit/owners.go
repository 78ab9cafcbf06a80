package admit

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Field ownership. The API server records, in each manager's managedFields
// entry, the fields of what it sent, before mutating admission runs: a
// rewritten field stays owned at a value its owner never applied, and a
// server-side apply of the same manifest by another manager then conflicts
// over it (.spec.config.ignition.version, first of all). MachineConfig's
// spec.config is x-kubernetes-preserve-unknown-fields: the API server
// tracks it as a map of maps (ownership per member, down to values) whose
// lists are atomic (owned whole). So the review takes every field the
// rewrite changed, as the API server names it, out of every entry: owned by
// no one, it takes any later apply by anyone without conflict, and is
// lowered again. An `mcs-admit` entry owning them instead would not do:
// applies conflict with updaters' fields too. The walk that names the
// fields also writes the patch's operations on spec.config: each at the
// deepest member that differs, a list replaced whole, as it is owned.

// fieldTree is the members of a JSON object a rewrite changed: one mapped
// to nil changed as a whole (a value, a list, a member added or dropped),
// one mapped to a tree only below it.
type fieldTree map[string]fieldTree

// configDiff is what a rewrite of spec.config from sent to stored changes,
// found in one walk: the fields, as the API server names them, and the
// JSON patch operations taking sent to stored (see patchConfig).
type configDiff struct {
	fields fieldTree
	ops    []string
	// whole: the operations are not to be trusted (either config is not
	// an object, or an object has a member name twice); replace
	// spec.config whole.
	whole bool
}

// changedFields are the fields of a MachineConfig a rewrite of its
// spec.config from sent to stored changes, and the operations doing it:
// spec.config as a whole where either is not a JSON object.
func changedFields(sent, stored []byte) configDiff {
	var d configDiff
	t, ok := diffObjects(sent, stored, configPointer, &d)
	if !ok {
		return configDiff{fields: fieldTree{"spec": {"config": nil}}, whole: true}
	}
	d.fields = fieldTree{"spec": {"config": t}}
	return d
}

// configPointer is spec.config's JSON pointer.
const configPointer = "/spec/config"

// diffObjects is what differs between two JSON objects, member by member,
// or false where either is not an object; d, where at is a's JSON pointer,
// collects the operations taking a to b: at the deepest member that
// differs, lists replaced whole (the API server owns them whole too).
func diffObjects(a, b []byte, at string, d *configDiff) (fieldTree, bool) {
	ma, err1 := members(a)
	mb, err2 := members(b)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	byName := make(map[string][]byte, len(mb))
	for _, m := range mb {
		byName[m.name] = m.value
	}
	if len(byName) != len(mb) {
		d.whole = true // which of b's twice named members is meant?
	}
	t := fieldTree{}
	for i, m := range ma {
		vb, ok := byName[m.name]
		delete(byName, m.name)
		switch {
		case !ok:
			t[m.name] = nil
			if slices.ContainsFunc(ma[:i], func(o member) bool { return o.name == m.name }) {
				d.whole = true // a's name twice: one operation would take both
			}
			d.ops = append(d.ops, patchOp("remove", at+"/"+pointerEscape(m.name), nil))
		case isObject(m.value) && isObject(vb):
			if sub, ok := diffObjects(m.value, vb, at+"/"+pointerEscape(m.name), d); !ok {
				t[m.name] = nil
				d.whole = true
			} else if len(sub) > 0 {
				t[m.name] = sub
			}
		case !sameJSON(m.value, vb):
			t[m.name] = nil
			d.ops = append(d.ops, patchOp("replace", at+"/"+pointerEscape(m.name), vb))
		}
	}
	for _, m := range mb {
		if _, ok := byName[m.name]; ok {
			t[m.name] = nil
			d.ops = append(d.ops, patchOp("add", at+"/"+pointerEscape(m.name), m.value))
		}
	}
	return t, true
}

func isObject(v []byte) bool { return len(v) > 0 && v[0] == '{' }

// unown takes the fields of t out of every FieldsV1 entry of managedFields
// (decoded), in place, and returns the entries kept and the JSON patch
// operations doing the same to the object. An entry left with no fields is
// dropped, as the API server drops it. The operations go from the last
// entry to the first: removing one leaves the indexes of those before it.
func unown(managedFields any, t fieldTree) (kept []any, ops []string) {
	entries, _ := managedFields.([]any)
	for i := len(entries) - 1; i >= 0; i-- {
		e, _ := entries[i].(map[string]any)
		if e == nil || e["fieldsType"] != "FieldsV1" {
			continue
		}
		fields, _ := e["fieldsV1"].(map[string]any)
		removed := unownIn(fields, t)
		if len(removed) == 0 {
			continue
		}
		at := "/metadata/managedFields/" + strconv.Itoa(i)
		if len(fields) == 0 {
			entries = append(entries[:i], entries[i+1:]...)
			ops = append(ops, removeOp(at))
			continue
		}
		for _, p := range removed {
			ops = append(ops, removeOp(at+"/fieldsV1"+p))
		}
	}
	return entries, ops
}

// unownIn removes the fields of t from a FieldsV1 object (members named
// "f:" and the field; "." the object itself, where it has members too) and
// returns the JSON pointers removed, relative to fields. A field changed
// whole goes with all below it. Where only members changed, an object
// owned itself stays owned (the API server takes a changed member, not the
// object holding it, from other managers), written as it writes it: {}.
// One left with no members and not owned itself goes.
func unownIn(fields map[string]any, t fieldTree) []string {
	var out []string
	for k, sub := range t {
		name := "f:" + k
		child, ok := fields[name]
		if !ok {
			continue
		}
		at := "/" + pointerEscape(name)
		m, _ := child.(map[string]any)
		if sub == nil {
			delete(fields, name)
			out = append(out, at)
			continue
		}
		removed := unownIn(m, sub)
		switch _, self := m["."]; {
		case len(removed) == 0:
		case len(m) == 0:
			delete(fields, name)
			out = append(out, at)
		case self && len(m) == 1:
			delete(m, ".")
			out = append(out, at+"/.")
			fallthrough
		default:
			for _, p := range removed {
				out = append(out, at+p)
			}
		}
	}
	return out
}

// removeOp is a JSON patch operation removing what pointer names.
func removeOp(pointer string) string { return patchOp("remove", pointer, nil) }

// patchOp is a JSON patch operation op at pointer, with value unless nil.
func patchOp(op, pointer string, value []byte) string {
	p, _ := json.Marshal(pointer)
	if value == nil {
		return `{"op":"` + op + `","path":` + string(p) + `}`
	}
	return `{"op":"` + op + `","path":` + string(p) + `,"value":` + string(value) + `}`
}

// pointerEscape escapes a member name for a JSON pointer (RFC 6901).
func pointerEscape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s // every member of a config walked: no allocation
	}
	return pointerEscaper.Replace(s)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// sameOwners reports whether two managedFields lists (decoded) hold the
// same entries in any order, but for their times.
func sameOwners(a, b any) bool {
	la, _ := a.([]any)
	lb, _ := b.([]any)
	if len(la) != len(lb) {
		return false
	}
	used := make([]bool, len(lb))
next:
	for _, ea := range la {
		for j, eb := range lb {
			if !used[j] && sameButTime(ea, eb) {
				used[j] = true
				continue next
			}
		}
		return false
	}
	return true
}

// sameButTime reports whether two managedFields entries are the same but
// for their times; their FieldsV1 as the API server reads them.
func sameButTime(a, b any) bool {
	ma, _ := a.(map[string]any)
	mb, _ := b.(map[string]any)
	if ma == nil || mb == nil || len(ma) != len(mb) {
		return false
	}
	for k, va := range ma {
		vb, ok := mb[k]
		switch {
		case !ok:
			return false
		case k == "time":
		case k == "fieldsV1":
			if !reflect.DeepEqual(fieldsRead(va), fieldsRead(vb)) {
				return false
			}
		case !reflect.DeepEqual(va, vb):
			return false
		}
	}
	return true
}

// fieldsRead is a FieldsV1 object with each {".": {}} written {}: both own
// the field and nothing below it.
func fieldsRead(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, c := range m {
		if k == "." && len(m) == 1 {
			return map[string]any{}
		}
		out[k] = fieldsRead(c)
	}
	return out
}
