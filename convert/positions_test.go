package convert

import (
	"errors"
	"strings"
	"testing"
)

// A problem is at a JSON path, with the line and column of the JSON apart
// from its message: the config in a MachineConfig is JSON the loader made,
// whose positions mean nothing to its author, and spec 2's parser gave only
// those positions and a snippet of that JSON with a caret.
func TestProblemPositions(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		path, msg string
		line      int
	}{
		{"spec 3", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"etc/x"}]}}`, "$.storage.files.0.path", "path not absolute", 1},
		{"spec 2", `{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"etc/x"}]}}`, "$.storage.files.0.path", "path not absolute", 1},
		{"version as a number", `{"ignition":{"version":3.2}}`, "$.ignition.version", `the version is a number, not a string: write all three parts, quoted in YAML (version: "3.2.0")`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.raw))
			var inv *InvalidError
			if !errors.As(err, &inv) || len(inv.Problems) != 1 {
				t.Fatalf("got %v, want one problem", err)
			}
			p := inv.Problems[0]
			if p.Path.String() != tc.path || !strings.HasPrefix(p.Message, tc.msg) || p.Line != tc.line || strings.ContainsAny(p.Message, "\n^") || strings.Contains(p.Message, "line ") {
				t.Errorf("got %+v, want path %s, message %q, line %d, no position in the message", p, tc.path, tc.msg, tc.line)
			}
			if tc.line > 0 && !strings.Contains(p.String(), "(line 1 col ") {
				t.Errorf("%q: a config read alone keeps its position", p.String())
			}
		})
	}
}
