package convert

import (
	"bytes"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"sigs.k8s.io/yaml"
)

func placeholderConfig(sources ...string) Config {
	var cfg Config
	cfg.Ignition.Version = "3.6.0"
	for i, s := range sources {
		s := s
		f := types.File{Node: types.Node{Path: "/etc/f" + string(rune('a'+i%26))}}
		f.Contents.Source = &s
		if i%3 == 2 {
			f.Append = []types.Resource{{Source: &s}}
		}
		cfg.Storage.Files = append(cfg.Storage.Files, f)
	}
	return cfg
}

// Swapping, encoding and restoring gives the bytes of encoding the config
// itself, in JSON and in the YAML sigs.k8s.io/yaml writes from that JSON.
func TestPlaceholdersRoundTrip(t *testing.T) {
	big := func(s string) string { return "data:," + strings.Repeat(s, MinPlaceholder/len(s)+1) }
	cases := []struct {
		name      string
		sources   []string
		plainOnly bool
		swapped   int
	}{
		{"small ones stay", []string{"data:,hi", "https://example.com/" + strings.Repeat("x", 600)}, false, 0},
		{"large data URLs", []string{big("a%20b"), big("c"), big("d;e")}, false, 4},
		{"base64", []string{"data:;base64," + strings.Repeat("SGVsbG8gd29ybGQK", 40)}, true, 1},
		{"escaped in JSON", []string{big("<&>"), big(`"\`), big("é\u2028")}, false, 4},
		{"not plain in YAML", []string{big("a b"), big("#"), big("c") + ":", big("\t"), big("[]{}"), big("é")}, true, 0},
		{"plain and not", []string{big("x"), big("y z"), big("x")}, true, 3},
		{"looks like a token", []string{"data:,mcsph-0011223344556677-0", big("q")}, true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := placeholderConfig(c.sources...)
			want, err := Marshal(&cfg, false)
			if err != nil {
				t.Fatal(err)
			}
			ph := NewPlaceholders()
			swapped := ph.Swap(cfg, c.plainOnly)
			if ph.Len() != c.swapped {
				t.Fatalf("%d swapped, want %d", ph.Len(), c.swapped)
			}
			again, _ := Marshal(&cfg, false)
			if !bytes.Equal(again, want) {
				t.Fatal("Swap changed its input")
			}
			tokens, err := Marshal(&swapped, false)
			if err != nil {
				t.Fatal(err)
			}
			got, n := ph.RestoreJSON(tokens)
			if n != ph.Len() || !bytes.Equal(got, want) {
				t.Fatalf("JSON: %d restored of %d; equal %v\n got %.300s\nwant %.300s", n, ph.Len(), bytes.Equal(got, want), got, want)
			}
			if !c.plainOnly {
				return
			}
			wantY, err := yaml.JSONToYAML(want)
			if err != nil {
				t.Fatal(err)
			}
			tokY, err := yaml.JSONToYAML(tokens)
			if err != nil {
				t.Fatal(err)
			}
			gotY, n := ph.RestoreYAML(tokY)
			if n != ph.Len() || !bytes.Equal(gotY, wantY) {
				t.Fatalf("YAML: %d restored of %d\n got %.300s\nwant %.300s", n, ph.Len(), gotY, wantY)
			}
		})
	}
}

// Two sets never share tokens.
func TestPlaceholdersNonce(t *testing.T) {
	a, b := NewPlaceholders(), NewPlaceholders()
	if a.lead == b.lead {
		t.Fatalf("both leads %q", a.lead)
	}
}

// What yamlPlain admits, the YAML writer writes as it is, wherever it
// stands: as a mapping value, a list item, deeper in, after a key of any
// length.
func FuzzYAMLPlain(f *testing.F) {
	for _, s := range []string{"data:,abc", "data:;base64,SGVsbG8=", "data:,a%20b", "data:,x:", "data:,x: y", "data:,#x", "data:,'q'", "data:,-", "data:,?x", "data:,(a)*!$@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.HasPrefix(s, "data:") || !yamlPlain(s) {
			return
		}
		for _, doc := range []any{
			map[string]any{"source": s},
			map[string]any{"a": []any{map[string]any{"contents": map[string]any{"source": s}}}},
			[]any{s},
		} {
			y, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(y, []byte(" "+s+"\n")) {
				t.Fatalf("%q written as\n%s", s, y)
			}
		}
	})
}

// Contents swapped after the first RestoreJSON are not restored there (and
// nothing panics); Leftover finds them, so the caller can encode without.
func TestPlaceholdersLateSwap(t *testing.T) {
	big := "data:," + strings.Repeat("z", MinPlaceholder)
	ph := NewPlaceholders()
	first := ph.Swap(placeholderConfig(big), false)
	js, _ := Marshal(&first, false)
	if out, n := ph.RestoreJSON(js); n != 1 || ph.Leftover(out) {
		t.Fatalf("restored %d, leftover %v", n, ph.Leftover(out))
	}
	late := ph.Swap(placeholderConfig(big), false)
	js, _ = Marshal(&late, false)
	out, n := ph.RestoreJSON(js)
	if n != 0 || !ph.Leftover(out) {
		t.Fatalf("late swap: restored %d, leftover %v", n, ph.Leftover(out))
	}
	other := NewPlaceholders()
	other.Swap(placeholderConfig(big), false)
	if other.Leftover(out) {
		t.Error("another set's tokens are taken for leftovers")
	}
}
