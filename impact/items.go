package impact

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/vincent-petithory/dataurl"

	"github.com/ignition-mcs/mcs/render"
)

// listKind is a list of the Ignition config whose items are compared by a
// key field.
type listKind struct {
	category string
	path     []string
	key      string
}

var listKinds = []listKind{
	{"files", []string{"storage", "files"}, "path"},
	{"directories", []string{"storage", "directories"}, "path"},
	{"links", []string{"storage", "links"}, "path"},
	{"units", []string{"systemd", "units"}, "name"},
	{"users", []string{"passwd", "users"}, "name"},
	{"groups", []string{"passwd", "groups"}, "name"},
	{"disks", []string{"storage", "disks"}, "device"},
	{"raid", []string{"storage", "raid"}, "name"},
	{"filesystems", []string{"storage", "filesystems"}, "device"},
	{"luks", []string{"storage", "luks"}, "name"},
}

// leaves are a thing's values by their path inside it; nil means absent.
type leaves map[string]any

// set is one category's things by name.
type set map[string]leaves

// changes compares two renders of a pool, category by category.
func (c *comparison) changes(o, n *render.Result) []*Change {
	ot, nt := configTree(o), configTree(n)
	var out []*Change
	for _, k := range listKinds {
		k := k
		ol, nl := items(ot, k.path, k.key), items(nt, k.path, k.key)
		if k.category == "users" {
			ol, nl = withoutSSHKeys(ol), withoutSSHKeys(nl)
		}
		out = append(out, c.compareSet(k.category, ol, nl, o, n,
			func(mc *render.MachineConfig, name string) ([]string, bool) {
				return append(append([]string{"spec", "config"}, k.path...), "?"+k.key+"="+name), hasItem(mc, k, name)
			})...)
	}
	ign := func(t map[string]any) set {
		m, _ := t["ignition"].(map[string]any)
		l := leaves{}
		flatten(m, "", l)
		delete(l, "version") // the spec, compared apart
		return set{"ignition": l}
	}
	out = append(out, c.compareSSHKeys(ot, nt, o, n)...)
	out = append(out, c.compareSet("ignition", ign(ot), ign(nt), o, n, nil)...)
	for _, k := range specKinds {
		out = append(out, c.compareSet(k.category, k.get(o), k.get(n), o, n, k.at)...)
	}
	return out
}

// compareSet lists what was added, removed or changed in one category. at
// gives the path of a thing inside a MachineConfig and whether that
// MachineConfig has it (nil: it names no MachineConfig).
func (c *comparison) compareSet(category string, old, new set, o, n *render.Result, at func(*render.MachineConfig, string) ([]string, bool)) []*Change {
	var out []*Change
	for _, name := range keys(old, new) {
		ol, nl := old[name], new[name]
		ch := &Change{Category: category, Name: name}
		s, r := c.new, n
		switch {
		case ol == nil:
			ch.Op = Added
		case nl == nil:
			ch.Op, s, r = Removed, c.old, o
		default:
			ch.Op, ch.Fields = Changed, fields(ol, nl)
			if len(ch.Fields) == 0 {
				continue
			}
		}
		if at != nil {
			ch.MachineConfig = supplier(s, r, category, name, at)
			if mc := s.mcs[ch.MachineConfig]; mc != nil {
				path, _ := at(mc, name)
				ch.At = c.at(s, ch.MachineConfig, path)
				ch.Local = mc.Locals[category+" "+name]
			}
		}
		out = append(out, ch)
	}
	return out
}

// supplier is the MachineConfig that supplies a thing: the render's own
// record when it keeps one, else the last in merge order that has it.
func supplier(s *sideData, r *render.Result, category, name string, at func(*render.MachineConfig, string) ([]string, bool)) string {
	pv := r.Provenance
	byCategory := map[string]map[string]string{
		"files": pv.Files, "directories": pv.Directories, "links": pv.Links,
		"units": pv.Units, "users": pv.Users, "kernelArguments": pv.KernelArguments,
	}
	if mc := byCategory[category][name]; mc != "" {
		return mc
	}
	for _, mcName := range slices.Backward(r.MachineConfigs) {
		if mc := s.mcs[mcName]; mc != nil {
			if _, ok := at(mc, name); ok {
				return mcName
			}
		}
	}
	return ""
}

func hasItem(mc *render.MachineConfig, k listKind, name string) bool {
	_, ok := items(tree(mc.Spec.Config), k.path, k.key)[name]
	return ok
}

// configTree is a render's merged config, in the newest spec's form so
// that two renders at different specs compare field by field.
func configTree(r *render.Result) map[string]any {
	js, _ := json.Marshal(&r.Config)
	return tree(js)
}

// tree decodes a config for comparing; an unreadable one is empty (the
// render has read it already).
func tree(js json.RawMessage) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(js, &m)
	return m
}

// items are a list's items by their key field, as leaves.
func items(t map[string]any, path []string, key string) set {
	var v any = t
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	out := set{}
	list, _ := v.([]any)
	for _, it := range list {
		m, _ := it.(map[string]any)
		name, ok := m[key].(string)
		if !ok {
			continue
		}
		l := leaves{}
		flatten(m, "", l)
		out[name] = l
	}
	return out
}

// flatten records every value under its path; list items are named by
// their name, path or device, so reordering alone is no change.
func flatten(v any, prefix string, out leaves) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(e, p, out)
		}
	case []any:
		for i, e := range x {
			flatten(e, prefix+"["+itemKey(e, i)+"]", out)
		}
	case nil:
	default:
		out[prefix] = x
	}
}

func itemKey(e any, i int) string {
	if m, ok := e.(map[string]any); ok {
		for _, k := range []string{"name", "path", "device"} {
			if s, ok := m[k].(string); ok {
				return s
			}
		}
	}
	return strconv.Itoa(i)
}

// keys are the keys of either map, sorted.
func keys[V any](a, b map[string]V) []string {
	out := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// fields lists the values that differ between two versions of a thing.
func fields(old, new leaves) []*Field {
	var out []*Field
	for _, k := range keys(old, new) {
		ov, nv := old[k], new[k]
		if fmt.Sprint(ov) == fmt.Sprint(nv) && (ov == nil) == (nv == nil) {
			continue
		}
		out = append(out, &Field{Field: k, Old: value(k, ov), New: value(k, nv)})
	}
	return slices.DeleteFunc(out, func(f *Field) bool { return impliedKey(f, out) })
}

// impliedKey reports whether f is the key field of a list item added or
// removed ("dropins[x.conf].name": x.conf) and another field of the item
// says so already.
func impliedKey(f *Field, all []*Field) bool {
	item, key, ok := strings.Cut(f.Field, "].")
	if !ok || strings.Contains(key, ".") || (f.Old != nil) == (f.New != nil) {
		return false
	}
	if _, name, _ := strings.Cut(item, "["); itemKey(map[string]any{key: name}, -1) != name {
		return false
	}
	for _, g := range all {
		if g != f && strings.HasPrefix(g.Field, item+"].") {
			return true
		}
	}
	return false
}

// shown are the fields whose values are printed: names, paths, modes and
// flags. Everything else (contents, sources, password hashes, keys,
// headers) is shown as its size and digest only.
var shown = map[string]bool{
	"path": true, "name": true, "target": true, "device": true, "format": true, "label": true,
	"uuid": true, "shell": true, "homeDir": true, "primaryGroup": true, "gecos": true, "groups": true,
	"compression": true, "hash": true, "mountOptions": true, "options": true, "openOptions": true,
	"url": true, "thumbprint": true, "typeGuid": true, "guid": true, "level": true, "devices": true,
	"kernelType": true, "fips": true, "osImageURL": true, "baseOSExtensionsContainerImage": true,
}

func value(field string, v any) *Value {
	base := field[strings.LastIndex(field, ".")+1:]
	if i := strings.IndexByte(base, '['); i >= 0 {
		base = base[:i]
	}
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		return &Value{Text: strconv.FormatBool(x)}
	case float64:
		if base == "mode" {
			return &Value{Text: fmt.Sprintf("%#04o", int64(x))}
		}
		return &Value{Text: strconv.FormatFloat(x, 'f', -1, 64)}
	case string:
		if shown[base] {
			if x == "" {
				x = `""`
			}
			return &Value{Text: x}
		}
		return digest(x)
	}
	return digest(fmt.Sprint(v))
}

// digest is a content's size and SHA-256; a data URL's are its data's.
func digest(s string) *Value {
	b := []byte(s)
	if strings.HasPrefix(s, "data:") {
		if du, err := dataurl.DecodeString(s); err == nil {
			b = du.Data
		}
	}
	sum := sha256.Sum256(b)
	n := len(b)
	return &Value{Size: &n, SHA256: hex.EncodeToString(sum[:])}
}
