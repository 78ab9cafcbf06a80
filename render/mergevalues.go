package render

import (
	"reflect"

	"github.com/coreos/ignition/v2/config/util"
)

// mergeValues is Ignition's merge of two configs of one type (config/merge,
// mergeStruct as of v2.27.0, whose rules its package comment lists) without
// the transcript: the same result for the same parent and child. Recording
// where every leaf came from walks the whole parent and copies a path per
// leaf, most of the merge's cost when a custom pool's small MachineConfig is
// merged onto the shared worker merge; the transcript is read only to name
// the MachineConfig behind an error or a reason, and is then made by
// Ignition's own merge (merged.transcripts). TestMergeValuesIsIgnitions
// holds the two equal on every pair and every pool of the test data.
func mergeValues(parent, child reflect.Value) reflect.Value {
	result := reflect.New(parent.Type()).Elem()
	info := newMergeInfo(parent, child)
	for i := 0; i < parent.NumField(); i++ {
		name := parent.Type().Field(i).Name
		p, c, r := parent.Field(i), child.Field(i), result.Field(i)
		switch kind := p.Kind(); {
		case util.IsPrimitive(kind):
			r.Set(c)
		case kind == reflect.Ptr && !p.IsNil() && !c.IsNil() && p.Elem().Kind() == reflect.Struct:
			r.Set(mergeValues(p.Elem(), c.Elem()).Addr())
		case kind == reflect.Ptr && c.IsNil():
			r.Set(p)
		case kind == reflect.Ptr:
			r.Set(c)
		case kind == reflect.Struct && c.IsZero():
			r.Set(p)
		case kind == reflect.Struct && p.IsZero():
			r.Set(c)
		case kind == reflect.Struct:
			r.Set(mergeValues(p, c))
		case kind == reflect.Slice && info.ignoreDups[name]:
			if p.Len()+c.Len() == 0 {
				continue
			}
			r.Set(reflect.MakeSlice(p.Type(), 0, p.Len()+c.Len()))
			for j := 0; j < p.Len(); j++ {
				appendValue(r, p.Index(j))
			}
			for j := 0; j < c.Len(); j++ {
				appendValue(r, c.Index(j))
			}
		case kind == reflect.Slice:
			if p.Len()+c.Len() == 0 {
				continue
			}
			r.Set(reflect.MakeSlice(p.Type(), 0, p.Len()+c.Len()))
			info.mergeList(name, p, c, r)
		default:
			panic("unreachable code reached")
		}
	}
	return result
}

// mergeList merges the keyed lists p and c of field name into r: an item
// of the parent whose key the child has in the same list is merged with
// it, in a list merged with this one (files, directories and links share
// paths) dropped; the others kept; then the child's items the parent has
// not, in order.
func (info mergeInfo) mergeList(name string, p, c, r reflect.Value) {
	inParent := map[string]bool{}
	for j := 0; j < p.Len(); j++ {
		inParent[util.CallKey(p.Index(j))] = true
	}
	for j := 0; j < p.Len(); j++ {
		item := p.Index(j)
		h := info.handle(name, util.CallKey(item))
		match, ok := info.byKey[h]
		switch {
		case !ok:
			appendValue(r, item)
		case info.list[h] != name:
			// In the child's list of another field: that list wins.
		case match.Kind() == reflect.Struct:
			// A header without a value removes the parent's.
			if name == "HTTPHeaders" && match.FieldByName("Value").IsNil() {
				continue
			}
			appendValue(r, mergeValues(item, match))
		case util.IsPrimitive(match.Kind()):
			appendValue(r, match)
		default:
			panic("List of pointers or slices or something else weird")
		}
	}
	for j := 0; j < c.Len(); j++ {
		if item := c.Index(j); !inParent[util.CallKey(item)] {
			appendValue(r, item)
		}
	}
}

// appendValue appends v to the slice s within its capacity, as Ignition's
// merge does.
func appendValue(s, v reflect.Value) {
	s.SetLen(s.Len() + 1)
	s.Index(s.Len() - 1).Set(v)
}

// mergeInfo is what Ignition's merge knows of a struct being merged: its
// lists that keep duplicates, the lists whose keys are shared (by handle),
// and the child's keyed items by handle and key, with the list each is in.
type mergeInfo struct {
	ignoreDups map[string]bool
	handles    map[string]string
	byKey      map[mergeKey]reflect.Value
	list       map[mergeKey]string
}

type mergeKey struct{ handle, key string }

func (info mergeInfo) handle(field, key string) mergeKey {
	if h, ok := info.handles[field]; ok {
		return mergeKey{h, key}
	}
	return mergeKey{field, key}
}

func newMergeInfo(parent, child reflect.Value) mergeInfo {
	info := mergeInfo{ignoreDups: map[string]bool{}, handles: map[string]string{},
		byKey: map[mergeKey]reflect.Value{}, list: map[mergeKey]string{}}
	if ig, ok := parent.Interface().(util.IgnoresDups); ok {
		for f := range ig.IgnoreDuplicates() {
			info.ignoreDups[f] = true
		}
	}
	if mk, ok := parent.Interface().(util.MergesKeys); ok {
		info.handles = mk.MergedKeys()
	}
	for i := 0; i < child.NumField(); i++ {
		field := child.Field(i)
		name := child.Type().Field(i).Name
		if field.Kind() != reflect.Slice || info.ignoreDups[name] {
			continue
		}
		for j := 0; j < field.Len(); j++ {
			v := field.Index(j)
			h := info.handle(name, util.CallKey(v))
			info.byKey[h] = v
			info.list[h] = name
		}
	}
	return info
}
