package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
)

// overrides finds what a later MachineConfig in merge order replaces of an
// earlier one's: a file, directory or link at the same path (one key space,
// as Ignition merges them), a unit, a dropin, a user or a group of the same
// name, written differently. The later one wins, upstream's rule; nothing
// fails, so this is the only place a person learns one config undid
// another's.
func overrides(order []*entry) []Override {
	type setter struct {
		value string // the leaf's JSON
		by    *entry
		path  convert.Path // of the item in by's MachineConfig
	}
	type item struct {
		kind   string
		leaves map[string]setter
	}
	seen := map[string]*item{}
	var out []Override
	index := map[string]int{} // key|loser → out index
	for _, e := range order {
		if e.cfg == nil {
			continue
		}
		for _, it := range keyedItems(e) {
			prev := seen[it.key]
			if prev == nil {
				prev = &item{kind: it.kind, leaves: map[string]setter{}}
				seen[it.key] = prev
			}
			for leaf, v := range it.leaves {
				old, ok := prev.leaves[leaf]
				if ok && old.value != v && old.by != e {
					k := it.key + "|" + old.by.mc.Metadata.Name
					i, have := index[k]
					if !have {
						i = len(out)
						index[k] = i
						out = append(out, Override{Kind: it.kind, Name: it.name,
							By: e.mc.Metadata.Name, BySource: where(e, it.path),
							Over: old.by.mc.Metadata.Name, OverSource: where(old.by, old.path)})
					}
					if f, _, _ := strings.Cut(leaf, "."); !slices.Contains(out[i].Fields, f) {
						out[i].Fields = append(out[i].Fields, f)
					}
				}
				prev.leaves[leaf] = setter{v, e, it.path}
			}
			if prev.kind != it.kind {
				prev.kind = it.kind
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].Fields)
	}
	return append(out, specOverrides(order)...)
}

// specOverrides finds the MachineConfig fields a later one set over an
// earlier one's value, as mergeSpec picks them: the last kernelType other
// than default, the last osImageURL and baseOSExtensionsContainerImage of a
// MachineConfig a person wrote.
func specOverrides(order []*entry) []Override {
	var out []Override
	for _, f := range []struct {
		name string
		get  func(*entry) string
	}{
		{"kernelType", func(e *entry) string {
			if k := e.mc.Spec.KernelType; k == kernelTypeRealtime || k == kernelType64kPages {
				return k
			}
			return ""
		}},
		{"osImageURL", func(e *entry) string { return userSet(e, e.mc.Spec.OSImageURL) }},
		{"baseOSExtensionsContainerImage", func(e *entry) string { return userSet(e, e.mc.Spec.BaseOSExtensionsContainerImage) }},
	} {
		var last *entry
		for _, e := range order {
			v := f.get(e)
			if v == "" {
				continue
			}
			if last != nil && f.get(last) != v {
				path := convert.NewPath("spec", f.name)
				out = append(out, Override{Kind: "spec", Name: f.name, Fields: []string{"value"},
					By: e.mc.Metadata.Name, BySource: where(e, path), Over: last.mc.Metadata.Name, OverSource: where(last, path)})
			}
			last = e
		}
	}
	return out
}

// userSet is v when a person's MachineConfig sets it; a generated one's
// image fields are the release's and never win (mergeSpec).
func userSet(e *entry, v string) string {
	if e.generated {
		return ""
	}
	return v
}

// where is "file:line" of a path in e's MachineConfig, or the file alone.
func where(e *entry, path convert.Path) string {
	if l := e.doc.line(path); l > 0 {
		return e.mc.Source + ":" + strconv.Itoa(l)
	}
	return e.mc.Source
}

// keyedItem is one entry of a config's keyed lists, flattened to its leaves.
type keyedItem struct {
	kind, name, key string
	path            convert.Path
	leaves          map[string]string // "contents.source" → its JSON; lists left out (Ignition merges them)
}

func keyedItems(e *entry) []keyedItem {
	// Every pool selecting the entry reads the same: the worker configs'
	// items are computed once per set, not once per custom pool.
	e.itemsOnce.Do(func() { e.items = entryItems(e) })
	return e.items
}

func entryItems(e *entry) []keyedItem {
	c := e.cfg
	var out []keyedItem
	add := func(kind, name, key string, at []any, v any, skip ...string) {
		out = append(out, keyedItem{kind: kind, name: name, key: key, path: inConfig(at), leaves: leaves(v, skip)})
	}
	for i, f := range c.Storage.Files {
		add("file", f.Path, "node "+f.Path, []any{"storage", "files", i}, f, "path")
	}
	for i, d := range c.Storage.Directories {
		add("directory", d.Path, "node "+d.Path, []any{"storage", "directories", i}, d, "path")
	}
	for i, l := range c.Storage.Links {
		add("link", l.Path, "node "+l.Path, []any{"storage", "links", i}, l, "path")
	}
	for i, u := range c.Systemd.Units {
		add("unit", u.Name, "unit "+u.Name, []any{"systemd", "units", i}, u, "name", "dropins")
		for j, d := range u.Dropins {
			n := u.Name + "/" + d.Name
			add("dropin", n, "dropin "+n, []any{"systemd", "units", i, "dropins", j}, d, "name")
		}
	}
	for i, u := range c.Passwd.Users {
		add("user", u.Name, "user "+u.Name, []any{"passwd", "users", i}, u, "name")
	}
	for i, g := range c.Passwd.Groups {
		add("group", g.Name, "group "+g.Name, []any{"passwd", "groups", i}, g, "name")
	}
	return out
}

// leaves flattens v's JSON to its non-list leaves, but for the fields skip.
func leaves(v any, skip []string) map[string]string {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	out := map[string]string{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, x := range m {
			if prefix == "" && slices.Contains(skip, k) {
				continue
			}
			switch x := x.(type) {
			case nil, []any:
			case map[string]any:
				walk(prefix+k+".", x)
			default:
				js, _ := json.Marshal(x)
				out[prefix+k] = string(js)
			}
		}
	}
	walk("", m)
	return out
}

// String says it for people: "file /etc/x: contents of MachineConfig
// 50-a (a.yaml:9) replaced by 60-b (b.yaml:9), the later in merge order".
func (o Override) String() string {
	if o.Kind == "spec" {
		return fmt.Sprintf("spec.%s: the value of MachineConfig %s (%s) replaced by %s (%s), the later in merge order",
			o.Name, o.Over, o.OverSource, o.By, o.BySource)
	}
	return fmt.Sprintf("%s %s: %s of MachineConfig %s (%s) replaced by %s (%s), the later in merge order",
		o.Kind, o.Name, strings.Join(o.Fields, ", "), o.Over, o.OverSource, o.By, o.BySource)
}
