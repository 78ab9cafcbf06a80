package intake

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// ButanePath maps a MachineConfig path to the Butane file it came from: the
// Ignition config is the file's top level, OpenShift's fields sit under
// openshift.
func ButanePath(path []string) []string {
	if len(path) < 2 || path[0] != "spec" {
		return nil
	}
	switch path[1] {
	case "config":
		return path[2:]
	case "kernelArguments":
		return append([]string{"openshift", "kernel_arguments"}, path[2:]...)
	case "extensions", "fips":
		return []string{"openshift", path[1]}
	case "kernelType":
		return []string{"openshift", "kernel_type"}
	}
	return nil
}

// Line is the line of the value at path under n, each segment as Child
// reads it: of the deepest part of path present, else n's own line.
func Line(n *yaml.Node, path []string) int {
	line, _ := Position(n, path)
	return line
}

// Position is Line with its column: where the key of the deepest part of
// path present starts (a list item's first character after "- "), else
// n's own position.
func Position(n *yaml.Node, path []string) (line, col int) {
	line, col = n.Line, n.Column
	for _, seg := range path {
		k, v := Child(n, seg)
		if v == nil {
			break
		}
		line, col, n = k.Line, k.Column, v
	}
	return line, col
}

// Child is the key and value seg names in a mapping, or the item it names
// in a list (returned as both): an index, "?field=value" for the item whose
// field is value, or "~value" for the item value. Nil when absent.
func Child(n *yaml.Node, seg string) (key, val *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i], n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if sel, ok := strings.CutPrefix(seg, "?"); ok {
			f, v, _ := strings.Cut(sel, "=")
			for _, it := range n.Content {
				if _, x := Child(it, f); x != nil && x.Kind == yaml.ScalarNode && x.Value == v {
					return it, it
				}
			}
			return nil, nil
		}
		if v, ok := strings.CutPrefix(seg, "~"); ok {
			for _, it := range n.Content {
				if it.Kind == yaml.ScalarNode && it.Value == v {
					return it, it
				}
			}
			return nil, nil
		}
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], n.Content[i]
		}
	}
	return nil, nil
}
