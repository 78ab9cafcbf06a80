package render

import (
	"strconv"
	"sync"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/intake"
)

// docRef is where an object sits in the text a person wrote, so that a
// problem found at a JSON path, at load or at render, names the line of
// that file rather than of the JSON the loader made of it. It lives as long
// as the Set: a served render keeps none.
type docRef struct {
	root   func() *yaml.Node // the object's node, parsed on first use; nil when unparsable
	butane bool              // the object was translated from a Butane file
	key    Key               // of everything lines are found from: an edit that moves lines changes it
}

// newDocRef locates an object at path at (e.g. $.items.3) inside doc, a
// YAML (or JSON) document starting on line first of its file.
func newDocRef(doc []byte, first int, at convert.Path, butane bool) *docRef {
	return &docRef{butane: butane, key: keyOf(doc, []byte(strconv.Itoa(first)), []byte(at.String()), []byte(strconv.FormatBool(butane))), root: sync.OnceValue(func() *yaml.Node {
		var n yaml.Node
		if yaml.Unmarshal(doc, &n) != nil || len(n.Content) == 0 {
			return nil
		}
		root := n.Content[0]
		for _, seg := range at.Parts() {
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

// line returns the line of the value at p ($.spec.config.storage.files.0
// .path, say) in the file: the deepest part of the path the text holds,
// else the object's first line; 0 when unknown.
func (d *docRef) line(p convert.Path) int {
	line, _ := d.pos(p)
	return line
}

// pos is line with the column (1-based; 0 with the line unknown).
func (d *docRef) pos(p convert.Path) (line, col int) {
	if d == nil {
		return 0, 0
	}
	n := d.root()
	if n == nil {
		return 0, 0
	}
	segs := p.Parts()
	if d.butane {
		segs = intake.ButanePath(segs)
	}
	return intake.Position(n, segs)
}

// locate gives every problem in list about the object at d, without a
// line yet, the line of its path.
func locate(d *docRef, list []*Error) {
	for _, x := range list {
		if x.Line == 0 && !x.Path.IsZero() {
			x.Line, x.Column = d.pos(x.Path)
		}
	}
}
