package render

import (
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/convert"
)

// ButaneLocal is a file a Butane config embeds from beside it: a local:,
// contents_local: or ssh_authorized_keys_local: name, or a storage tree.
type ButaneLocal struct {
	At   convert.Path // where the config names it
	Name string       // as named: slash-separated, relative to the Butane file's directory
	Tree bool         // a directory (storage.trees), all of whose files are embedded
	// Item is what it fills in the Ignition config as render diff names
	// it ("files /etc/motd", "units x.service"); empty for a tree.
	Item string
}

// ButaneLocals lists, in path order, the local files a Butane document
// embeds; none when it is not YAML (Butane reports that).
func ButaneLocals(data []byte) []ButaneLocal {
	var doc any
	if yaml.Unmarshal(data, &doc) != nil {
		return nil
	}
	var out []ButaneLocal
	eachLocal(doc, convert.NewPath(), func(at convert.Path, name string, tree bool) {
		l := ButaneLocal{At: at, Name: name, Tree: tree}
		if !tree {
			l.Item = localItem(doc, at.Parts())
		}
		out = append(out, l)
	})
	slices.SortFunc(out, func(a, b ButaneLocal) int { return strings.Compare(a.At.String(), b.At.String()) })
	return out
}

// localItems are the lists whose items a local file can fill, each with
// render diff's category and the field naming an item.
var localItems = map[string]struct{ category, key string }{
	"storage.files": {"files", "path"},
	"systemd.units": {"units", "name"},
	"passwd.users":  {"users", "name"},
}

// localItem names the item a local file at parts fills, or "".
func localItem(doc any, parts []string) string {
	if len(parts) < 3 {
		return ""
	}
	li, ok := localItems[parts[0]+"."+parts[1]]
	if !ok {
		return ""
	}
	v := doc
	for _, p := range parts[:3] {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i := 0
			for _, c := range p {
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return ""
			}
			v = x[i]
		}
	}
	m, _ := v.(map[string]any)
	name, _ := m[li.key].(string)
	if name == "" {
		return ""
	}
	return li.category + " " + name
}

// eachLocal calls f for every local file reference in a Butane document:
// "local" (a directory under storage.trees), "contents_local" strings and
// "ssh_authorized_keys_local" lists.
func eachLocal(v any, at convert.Path, f func(at convert.Path, local string, tree bool)) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			s, ok := c.(string)
			switch {
			case ok && k == "local":
				f(at.Append(k), s, inTrees(at))
			case ok && k == "contents_local":
				f(at.Append(k), s, false)
			case k == "ssh_authorized_keys_local":
				list, _ := c.([]any)
				for i, x := range list {
					if s, ok := x.(string); ok {
						f(at.Append(k, i), s, false)
					}
				}
			default:
				eachLocal(c, at.Append(k), f)
			}
		}
	case []any:
		for i, c := range v {
			eachLocal(c, at.Append(i), f)
		}
	}
}

// inTrees says whether at is inside storage.trees, whose local is a
// directory.
func inTrees(at convert.Path) bool {
	parts := at.Parts()
	for i := range len(parts) - 1 {
		if parts[i] == "storage" && parts[i+1] == "trees" {
			return true
		}
	}
	return false
}
