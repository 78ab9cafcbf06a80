package render

import (
	"hash"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ignition-mcs/mcs/internal/intake"
)

// docRef is where an object sits in the text a person wrote, so that a
// problem found at a JSON path, at load or at render, names the line of
// that file rather than of the JSON the loader made of it. It lives as long
// as the Set: a served render keeps none.
type docRef struct {
	root   func() *yaml.Node // the object's node, parsed on first use; nil when unparsable
	butane bool              // the object was translated from a Butane file
	// key is what the lines depend on, for fingerprints: an edit that
	// moves lines changes what a render says, if not what it writes.
	key func(h hash.Hash)
}

// newDocRef locates an object at path at (e.g. "$.items.3") inside doc, a
// YAML (or JSON) document starting on line first of its file.
func newDocRef(doc []byte, first int, at string, butane bool) *docRef {
	key := func(h hash.Hash) {
		writeField(h, doc)
		writeField(h, []byte(strconv.Itoa(first)+" "+at))
	}
	return &docRef{butane: butane, key: key, root: sync.OnceValue(func() *yaml.Node {
		var n yaml.Node
		if yaml.Unmarshal(doc, &n) != nil || len(n.Content) == 0 {
			return nil
		}
		root := n.Content[0]
		for _, seg := range splitPath(at) {
			if _, root = intake.Child(root, seg); root == nil {
				return nil
			}
		}
		shift(root, first-1)
		return root
	})}
}

// shift moves every line of the tree by d, from the document's to the file's.
func shift(n *yaml.Node, d int) {
	n.Line += d
	for _, c := range n.Content {
		shift(c, d)
	}
}

// line returns the line of the value at JSON path p ("$.spec.config.storage
// .files.0.path") in the file: the deepest part of the path the text holds,
// else the object's first line; 0 when unknown.
func (d *docRef) line(p string) int {
	if d == nil {
		return 0
	}
	n := d.root()
	if n == nil {
		return 0
	}
	segs := splitPath(p)
	if d.butane {
		segs = intake.ButanePath(segs)
	}
	line := n.Line
	for _, seg := range segs {
		k, v := intake.Child(n, seg)
		if v == nil {
			break
		}
		line, n = k.Line, v
	}
	return line
}

// splitPath splits "$.spec.config.storage.files.0" into its parts.
func splitPath(p string) []string {
	p = strings.TrimPrefix(strings.TrimPrefix(p, "$"), ".")
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}

// locate gives every problem in list about the object at d, without a
// line yet, the line of its path.
func locate(d *docRef, list []*Error) {
	for _, x := range list {
		if x.Line == 0 && x.Path != "" {
			x.Line = d.line(x.Path)
		}
	}
}
