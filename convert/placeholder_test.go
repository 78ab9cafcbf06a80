package convert

import (
	"bytes"
	"slices"
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
	big := func(s string) string { return "data:," + strings.Repeat(s, minPlaceholder/len(s)+1) }
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
			want, wantY := encodeBoth(t, &cfg)
			ph := newPlaceholders(c.plainOnly)
			swapped := ph.swap(cfg)
			if len(ph.orig) != c.swapped {
				t.Fatalf("%d swapped, want %d", len(ph.orig), c.swapped)
			}
			if again, _ := encodeBoth(t, &cfg); !bytes.Equal(again, want) {
				t.Fatal("Swap changed its input")
			}
			tokens, tokY := encodeBoth(t, &swapped)
			got, n := ph.restoreJSON(tokens)
			if n != len(ph.orig) || !bytes.Equal(got, want) {
				t.Fatalf("JSON: %d restored of %d; equal %v\n got %.300s\nwant %.300s", n, len(ph.orig), bytes.Equal(got, want), got, want)
			}
			if !c.plainOnly {
				return
			}
			gotY, n := ph.restoreYAML(tokY)
			if n != len(ph.orig) || !bytes.Equal(gotY, wantY) {
				t.Fatalf("YAML: %d restored of %d\n got %.300s\nwant %.300s", n, len(ph.orig), gotY, wantY)
			}
		})
	}
}

// encodeBoth is cfg as Marshal writes it and the YAML sigs.k8s.io/yaml writes
// from that; an error fails t.
func encodeBoth(t *testing.T, cfg *Config) (js, y []byte) {
	t.Helper()
	js, err := Marshal(cfg, false)
	if err == nil {
		y, err = yaml.JSONToYAML(js)
	}
	if err != nil {
		t.Fatal(err)
	}
	return js, y
}

// Two sets never share tokens.
func TestPlaceholdersNonce(t *testing.T) {
	a, b := newPlaceholders(false), newPlaceholders(false)
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

// Contents swapped after the first restoreJSON are not restored there (and
// nothing panics); leftover finds them, so the Encoder can encode without.
func TestPlaceholdersLateSwap(t *testing.T) {
	big := "data:," + strings.Repeat("z", minPlaceholder)
	ph := newPlaceholders(false)
	first := ph.swap(placeholderConfig(big))
	js, _ := Marshal(&first, false)
	if out, n := ph.restoreJSON(js); n != 1 || ph.leftover(out) {
		t.Fatalf("restored %d, leftover %v", n, ph.leftover(out))
	}
	late := ph.swap(placeholderConfig(big))
	js, _ = Marshal(&late, false)
	out, n := ph.restoreJSON(js)
	if n != 0 || !ph.leftover(out) {
		t.Fatalf("late swap: restored %d, leftover %v", n, ph.leftover(out))
	}
	other := newPlaceholders(false)
	other.swap(placeholderConfig(big))
	if other.leftover(out) {
		t.Error("another set's tokens are taken for leftovers")
	}
}

// The Encoder writes the bytes of Encode at every output spec, with or
// without an edit, and the YAML a writer builds around them; validating
// through one ValidItems shared by all changes none of it.
func TestEncoder(t *testing.T) {
	big := "data:," + strings.Repeat("p", minPlaceholder)
	var shared ValidItems
	for _, c := range []struct {
		name    string
		sources []string
		forYAML bool
	}{
		{"none held out", []string{"data:,small"}, false},
		{"held out", []string{big, "data:," + strings.Repeat("a%20b", 200), big}, false},
		{"held out for YAML", []string{big, "data:," + strings.Repeat("a b", 200)}, true},
	} {
		cfg := placeholderConfig(c.sources...)
		enc := NewEncoder(cfg, c.forYAML).Validating(&shared)
		edit := func(c *Config) error {
			c.Storage.Files = append(slices.Clone(c.Storage.Files), types.File{Node: types.Node{Path: "/etc/added"}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: new(big)}}})
			return nil
		}
		edited := cfg
		_ = edit(&edited)
		for _, v := range OutputVersions {
			t.Run(c.name+"/"+v.String(), func(t *testing.T) {
				for _, tc := range []struct {
					edit func(*Config) error
					cfg  Config
				}{{nil, cfg}, {edit, edited}} {
					want, werr := Encode(&tc.cfg, v, false)
					got, err := enc.Encode(v, tc.edit)
					if (err != nil) != (werr != nil) || err == nil && !bytes.Equal(got.JSON, want) {
						t.Fatalf("Encoder: %v; Encode: %v; equal bytes: %v", err, werr, err == nil && bytes.Equal(got.JSON, want))
					}
					if err != nil {
						continue
					}
					wrap := func(js []byte) ([]byte, error) {
						return yaml.JSONToYAML(append(append([]byte(`{"config":`), js...), '}'))
					}
					wantY, _ := wrap(want)
					restored := func(js []byte, r Restorer) ([]byte, error) {
						y, err := wrap(js)
						return r.YAML(y), err
					}
					if gotY, err := got.YAML(restored); err != nil || !bytes.Equal(gotY, wantY) {
						t.Fatalf("YAML differs (%v)", err)
					}
				}
			})
		}
	}
}
