package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/intake"
	"github.com/ignition-mcs/mcs/render"
)

// document is one YAML document of a file (a JSON file is one), with its
// parse for positions: yaml.v3's nodes, which keep lines and columns, where
// the values are Kubernetes' reading of the YAML (intake.YAMLToJSON).
type document struct {
	index int // 1-based, counting the documents that hold something
	start int // byte offset in the file
	line  int // the file's line the document starts on
	t     *text
	json  bool // the file is JSON

	root *yaml.Node         // nil when yaml.v3 cannot read it
	flat []*yaml.Node       // every node, in document order
	pos  map[*yaml.Node]int // index in flat
}

// off is the file offset of n, or -1.
func (d *document) off(n *yaml.Node) int {
	o := d.t.offset(n.Line, n.Column)
	if o < 0 {
		return -1
	}
	return d.start + o
}

// fileLine is the file's line of n.
func (d *document) fileLine(n *yaml.Node) int { return d.line + n.Line - 1 }

// objRef is one object of a file: a document's, a List's item, or a JSON
// array's element.
type objRef struct {
	doc                    *document
	at                     convert.Path // inside the document: $ or $.items.3
	kind, apiVersion, name string
	js                     []byte
	node                   *yaml.Node // nil when not found
}

// label is how messages name the object: "MachineConfig/name (document
// 2)", with where in a List or array when it is in one.
func (o *objRef) label() string {
	s := o.kind
	if s == "" {
		s = "object"
	}
	if o.name != "" {
		s += "/" + o.name
	}
	where := fmt.Sprintf("document %d", o.doc.index)
	if len(o.at.Path) > 0 {
		where += ", " + strings.TrimPrefix(o.at.String(), "$.")
	}
	return s + " (" + where + ")"
}

// objects reads a file's objects as render's loader does: JSON (an object
// or an array of them) or a YAML stream, Lists flattened.
func objects(file string, data []byte) ([]*objRef, []*render.Error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		d := newDocument(1, 0, 1, data, true)
		var out []*objRef
		errs := d.appendObjects(&out, file, trimmed, convert.NewPath())
		return out, errs
	}
	if len(trimmed) > 0 && strings.EqualFold(filepath.Ext(file), ".json") {
		var v any
		err := json.Unmarshal(data, &v)
		return nil, []*render.Error{{File: file, Message: "invalid JSON: " + err.Error(), Err: render.ErrInvalid}}
	}
	var out []*objRef
	var errs []*render.Error
	n := 0
	for _, sp := range render.DocumentSpans(data) {
		doc := data[sp.Start:sp.End]
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := intake.YAMLToJSON(doc, sp.Line)
		if err != nil {
			x := &render.Error{File: file, Message: "invalid YAML: " + err.Error(), Err: render.ErrInvalid}
			var ye *intake.YAMLError
			if errors.As(err, &ye) {
				x.Line, x.Column = ye.Line, ye.Column
			}
			errs = append(errs, x)
			continue
		}
		if bytes.Equal(js, []byte("null")) {
			continue // comments only
		}
		n++
		d := newDocument(n, sp.Start, sp.Line, doc, false)
		errs = append(errs, d.appendObjects(&out, file, js, convert.NewPath())...)
	}
	return out, errs
}

func newDocument(index, start, line int, b []byte, isJSON bool) *document {
	d := &document{index: index, start: start, line: line, t: newText(b), json: isJSON}
	var n yaml.Node
	if yaml.Unmarshal(b, &n) == nil && len(n.Content) > 0 {
		d.root = n.Content[0]
		d.pos = map[*yaml.Node]int{}
		var walk func(*yaml.Node)
		walk = func(x *yaml.Node) {
			d.pos[x] = len(d.flat)
			d.flat = append(d.flat, x)
			for _, c := range x.Content {
				walk(c)
			}
		}
		walk(d.root)
	}
	return d
}

// appendObjects reads one JSON value at at: an object (a List's items are
// read in turn) or an array of objects.
func (d *document) appendObjects(out *[]*objRef, file string, js []byte, at convert.Path) []*render.Error {
	js = bytes.TrimSpace(js)
	if len(js) > 0 && js[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(js, &items); err != nil {
			return []*render.Error{{File: file, Line: d.line, Path: at, Message: err.Error(), Err: render.ErrInvalid}}
		}
		var errs []*render.Error
		for i, it := range items {
			errs = append(errs, d.appendObjects(out, file, it, at.Append(i))...)
		}
		return errs
	}
	var head struct {
		APIVersion any `json:"apiVersion"`
		Kind       any `json:"kind"`
		Metadata   struct {
			Name any `json:"name"`
		} `json:"metadata"`
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return []*render.Error{{File: file, Line: d.line, Path: at, Message: "not a Kubernetes object", Err: render.ErrInvalid}}
	}
	o := &objRef{doc: d, at: at, js: js}
	o.kind, _ = head.Kind.(string)
	o.apiVersion, _ = head.APIVersion.(string)
	o.name, _ = head.Metadata.Name.(string)
	if strings.HasSuffix(o.kind, "List") && len(head.Items) > 0 && !bytes.Equal(head.Items, []byte("null")) {
		return d.appendObjects(out, file, head.Items, at.Append("items"))
	}
	o.node = d.find(at.Parts())
	*out = append(*out, o)
	return nil
}

// find is the node at path under the document's root, or nil.
func (d *document) find(path []string) *yaml.Node {
	n := d.root
	for _, seg := range path {
		if n == nil {
			return nil
		}
		_, n = intake.Child(n, seg)
	}
	return n
}
