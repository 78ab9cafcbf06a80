package intake

import (
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// Line finds the deepest part of a path present, through keys, indexes
// and Child's list selectors.
func TestLine(t *testing.T) {
	var doc yaml.Node
	src := "spec:\n  config:\n    storage:\n      files:\n      - path: /etc/a\n      - path: /etc/b\n        mode: 420\n  kernelArguments:\n  - nosmt\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for _, tc := range []struct {
		name string
		path []string
		want int
	}{
		{"root", nil, 1},
		{"key", []string{"spec", "config"}, 2},
		{"index", []string{"spec", "config", "storage", "files", "1", "mode"}, 7},
		{"selector", []string{"spec", "config", "storage", "files", "?path=/etc/b"}, 6},
		{"value", []string{"spec", "kernelArguments", "~nosmt"}, 9},
		{"deepest present", []string{"spec", "config", "storage", "files", "5", "path"}, 4},
		{"absent at once", []string{"status"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(root, tc.path); got != tc.want {
				t.Errorf("Line(%q) = %d, want %d", tc.path, got, tc.want)
			}
		})
	}
}
