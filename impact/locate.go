package impact

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ignition-mcs/mcs/internal/intake"
)

// locator finds the line of a field of a MachineConfig in the file it was
// read from, so CI can annotate that line. Files are read again (the loader
// keeps no positions) and parsed once each; JSON is read as the YAML it is.
type locator struct {
	files map[string][]*yaml.Node // file → its documents' roots; nil when unreadable
}

func newLocator() *locator { return &locator{files: map[string][]*yaml.Node{}} }

// line returns the line (and column) of path (keys; in lists an index, "?field=value"
// for the item whose field is value, or "~value" for the item value) inside MachineConfig mc of file: the deepest part of
// the path that exists, else the object's first line; 0 when the file cannot
// be read or holds no such object.
func (l *locator) line(file, mc string, path []string) (line, col int) {
	return l.lineOf(file, "MachineConfig", mc, path)
}

// lineOf is line for an object of any kind.
func (l *locator) lineOf(file, kind, name string, path []string) (line, col int) {
	obj := l.object(file, kind, name)
	if obj == nil {
		return 0, 0
	}
	if strings.EqualFold(filepath.Ext(file), ".bu") {
		path = intake.ButanePath(path)
	}
	return intake.Position(obj, path)
}

// object is the object of kind named name in file (a document, an item of
// a List or of a JSON array), or a Butane file's root.
func (l *locator) object(file, kind, name string) *yaml.Node {
	docs, seen := l.files[file]
	if !seen {
		docs = readDocs(file)
		l.files[file] = docs
	}
	if strings.EqualFold(filepath.Ext(file), ".bu") && len(docs) > 0 {
		return docs[0]
	}
	for _, d := range docs {
		if n := findObject(d, kind, name); n != nil {
			return n
		}
	}
	return nil
}

func readDocs(file string) []*yaml.Node {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var d yaml.Node
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) || err != nil {
			// A file the loader read but this parser cannot is only
			// left without lines.
			return docs
		}
		if len(d.Content) > 0 {
			docs = append(docs, d.Content[0])
		}
	}
}

func findObject(n *yaml.Node, kind, name string) *yaml.Node {
	switch n.Kind {
	case yaml.SequenceNode:
		for _, it := range n.Content {
			if o := findObject(it, kind, name); o != nil {
				return o
			}
		}
	case yaml.MappingNode:
		if _, items := intake.Child(n, "items"); items != nil {
			return findObject(items, kind, name)
		}
		_, meta := intake.Child(n, "metadata")
		_, k := intake.Child(n, "kind")
		if meta == nil || k != nil && k.Value != kind {
			return nil
		}
		if _, v := intake.Child(meta, "name"); v != nil && v.Value == name {
			return n
		}
	}
	return nil
}
