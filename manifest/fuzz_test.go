package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ignition-mcs/mcs/convert"
)

// FuzzLower feeds Lower any file: it never panics, and what it rewrites
// (read back and checked by Lower itself) lowers again to the same bytes.
func FuzzLower(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "cmd", "render", "testdata", "lower", "*"))
	more, _ := filepath.Glob(filepath.Join("..", "fixtures", "features", "*", "*.yaml"))
	for _, p := range append(seeds, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(filepath.Base(p), b)
		}
	}
	f.Add("x.yaml", []byte("kind: MachineConfig\nspec:\n  config:\n    ignition:\n      version: '3.5.0'\n    kernelArguments:\n      shouldExist: []\n"))
	f.Add("x.json", []byte(`[{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.2.0"}}}}]`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		res, err := Lower(name, data, convert.Version{})
		if err != nil {
			if !bytes.Equal(res.Data, data) {
				t.Fatalf("failed, yet rewrote: %v", err)
			}
			return
		}
		if !res.Changed() {
			if !bytes.Equal(res.Data, data) {
				t.Fatal("nothing lowered, yet rewrote")
			}
			return
		}
		again, err := Lower(name, res.Data, convert.Version{})
		if err != nil || again.Changed() || !bytes.Equal(again.Data, res.Data) {
			t.Fatalf("not idempotent: %v\n%s", err, res.Data)
		}
	})
}

func TestScan(t *testing.T) {
	for _, c := range []struct {
		name, in string
		flow     bool
		end      int // of the scalar or flow collection at 0; -1: none
	}{
		{"plain", "3.5.0 # c\n", false, 5},
		{"plain-flow", "3.5.0}, x", true, 5},
		{"double", `"3.5.0" x`, false, 7},
		{"double-escape", `"a\"b" x`, false, 6},
		{"single", `'it''s' x`, false, 7},
		{"unclosed", `"abc`, false, -1},
		{"flow-map", `{"a": "}", b: [1, {c: 2}]} # x`, false, 26},
		{"flow-comment", "{a: 1, # }\n b: 2}", false, 17},
		{"flow-unclosed", "{a: [1}", false, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got int
			if c.in[0] == '{' {
				got = flowEnd([]byte(c.in), 0)
			} else {
				style := styleOf(c.in[0])
				got = scalarEnd([]byte(c.in), 0, style, c.flow)
			}
			if got != c.end {
				t.Errorf("end %d, want %d", got, c.end)
			}
		})
	}
}

func styleOf(c byte) yaml.Style {
	switch c {
	case '"':
		return yaml.DoubleQuotedStyle
	case '\'':
		return yaml.SingleQuotedStyle
	}
	return 0
}
