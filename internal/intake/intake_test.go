package intake

import (
	"errors"
	"strings"
	"testing"

	butanecommon "github.com/coreos/ignition/v2/butane/config/common"
)

func TestYAMLToJSON(t *testing.T) {
	for _, tc := range []struct {
		name      string
		doc       string
		firstLine int
		json      string
		line      int // of the error; 0: no error
	}{
		{"yaml", "a: 1\nb: [x]\n", 1, `{"a":1,"b":["x"]}`, 0},
		{"json", `{"a":"b"}`, 1, `{"a":"b"}`, 0},
		{"error on line 2", "a: 1\n\tb: 2\n", 1, "", 2},
		{"error in a later document", "a: 1\nb: [\n", 11, "", 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js, err := YAMLToJSON([]byte(tc.doc), tc.firstLine)
			if tc.line == 0 {
				if err != nil || string(js) != tc.json {
					t.Fatalf("got %s, %v; want %s", js, err, tc.json)
				}
				return
			}
			var ye *YAMLError
			if !errors.As(err, &ye) || ye.Line != tc.line || !strings.Contains(ye.Msg, "line ") || strings.Contains(ye.Msg, "converting") {
				t.Fatalf("got %#v, want a YAMLError at line %d", err, tc.line)
			}
		})
	}
}

// A YAML mistake is placed on the line that makes it, at its first
// character: not the first line of the block the parser was in.
func TestYAMLErrorPosition(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		line, col int
	}{
		{"key less indented than its siblings", "a:\n  b: 1\n c: 2\n", 3, 2},
		{"key more indented in a list item", "l:\n- x: 1\n   y: 2\n", 3, 4},
		{"tab", "a: 1\n\tb: 2\n", 2, 1},
		{"unclosed flow list: where it opens", "a: [1, 2\nb: 3\n", 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := YAMLToJSON([]byte(c.doc), 5)
			var ye *YAMLError
			if !errors.As(err, &ye) || ye.Line != c.line+4 || ye.Column != c.col {
				t.Fatalf("%v (%+v), want line %d col %d", err, ye, c.line+4, c.col)
			}
		})
	}
}

func FuzzYAMLToJSON(f *testing.F) {
	for _, s := range []string{"a: 1\n", "a: [\n", "- x\n- y: {z: 1}\n", "\tx", "line 99: x", "a:\n  b: 1\n c: 2\n", "l:\n- x: 1\n   y: 2\n"} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, doc string, first int) {
		first = 1 + first%1000
		if first < 1 {
			first = 1
		}
		_, err := YAMLToJSON([]byte(doc), first)
		var ye *YAMLError
		if err != nil && (!errors.As(err, &ye) || ye.Line != 0 && ye.Line < first) {
			t.Fatalf("error %#v from a document starting on line %d", err, first)
		}
		// The line is one of the document's, the column one of that line's.
		if ye != nil && ye.Line != 0 {
			lines := strings.Split(doc, "\n")
			n := ye.Line - first
			if n >= len(lines) || ye.Column < 1 || ye.Column > len(lines[n])+1 {
				t.Fatalf("error at line %d col %d of a %d-line document starting on line %d: %v", ye.Line, ye.Column, len(lines), first, err)
			}
		}
	})
}

// One rule: a key Butane would drop is an error at its line, whatever the mode.
func TestButane(t *testing.T) {
	const head = "variant: openshift\nversion: 4.14.0\nmetadata:\n  name: x\n  labels:\n    machineconfiguration.openshift.io/role: worker\n"
	for _, tc := range []struct {
		name  string
		src   string
		raw   bool
		want  []wantProblem // nil: translates
		unsup bool
	}{
		{"clean", head + "storage:\n  files:\n    - path: /etc/x\n", false, nil, false},
		{"typo", head + "storage:\n  files:\n    - path: /etc/x\n      contnts: {inline: x}\n", false,
			[]wantProblem{{"$.storage.files.0.contnts", 10, 7}}, false},
		{"typo, raw", head + "systemd:\n  unitz: []\n", true, []wantProblem{{"$.systemd.unitz", 8, 3}}, false},
		{"MachineConfig field in raw mode", head + "openshift:\n  fips: true\n", true, []wantProblem{{"$.openshift.fips", 8, 9}}, false},
		{"MachineConfig field", head + "openshift:\n  fips: true\n", false, nil, false},
		{"unknown version", "variant: openshift\nversion: 9.0.0\n", false, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Butane("openshift", []byte(tc.src), butanecommon.TranslateBytesOptions{Raw: tc.raw})
			if tc.unsup {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("got %v, want ErrUnsupported", err)
				}
				return
			}
			var be *ButaneError
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.As(err, &be) || len(be.Problems) != len(tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			for i, w := range tc.want {
				g := be.Problems[i]
				if g.Path.String() != w.path || g.Line != w.line || g.Column != w.col {
					t.Errorf("problem %d at %s %s, want %s line %d col %d", i, g.Path, g.Where(), w.path, w.line, w.col)
				}
			}
			if !strings.Contains(err.Error(), "butane openshift: ") {
				t.Errorf("error %q does not name the config", err)
			}
		})
	}
}

// wantProblem is a problem a test expects: its path as text, line, column.
type wantProblem struct {
	path      string
	line, col int
}
