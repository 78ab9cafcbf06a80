package convert

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"
)

// goldenCases are the Encode outputs kept under testdata/golden; -update
// rewrites them.
var goldenCases = []struct {
	fixture  string
	versions []Version
}{
	{"features/baseline-3.0.ign", []Version{V2_2, V3_0, V3_1, V3_6}},
	{"features/tang-advertisement.ign", []Version{V3_4, V3_5, V3_6}},
	{"features/spec2-defaults.ign", []Version{V2_2, V3_3}},
	{"features/mode-setuid.ign", []Version{V3_6}},
	{"realdata/aws/99-worker-chrony.json", []Version{V2_2, V3_1, V3_5}},
	{"realdata/aws/97-worker-generated-kubelet.json", []Version{V2_2, V3_0, V3_6}},
	{"mco/ign_config.json", []Version{V2_2, V3_0, V3_6}},
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		raw, err := os.ReadFile(filepath.Join("testdata", tc.fixture))
		if err != nil {
			t.Fatal(err)
		}
		p := mustParse(t, tc.fixture, raw)
		for _, v := range tc.versions {
			for _, pretty := range []bool{false, true} {
				name := strings.NewReplacer("/", "_", ".ign", "", ".json", "").Replace(tc.fixture) + "@" + v.String()
				if pretty {
					name += ".pretty"
				}
				t.Run(name, func(t *testing.T) {
					got, err := Encode(&p.Config, v, pretty)
					if err != nil {
						t.Fatal(err)
					}
					golden := filepath.Join("testdata", "golden", name+".json")
					if *update {
						writeFile(t, golden, got)
						return
					}
					want, err := os.ReadFile(golden)
					if err != nil {
						t.Fatalf("%v (run with -update to create it)", err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("Encode differs from %s (run with -update if the change is meant):\ngot  %s\nwant %s", golden, got, want)
					}
				})
			}
		}
	}
}

// Same input, same bytes: every fixture, parsed and encoded twice from
// scratch, for the newest spec, the oldest spec 3 and spec 2 (the goldens
// pin the bytes across runs).
func TestDeterministic(t *testing.T) {
	for _, fx := range fixtures(t) {
		a, b := mustParse(t, fx.name, fx.raw), mustParse(t, fx.name, fx.raw)
		for _, v := range []Version{V2_2, V3_0, Newest} {
			x, errX := Encode(&a.Config, v, false)
			y, errY := Encode(&b.Config, v, false)
			if (errX == nil) != (errY == nil) || (errX != nil && errX.Error() != errY.Error()) {
				t.Errorf("%s@%s: errors differ: %v / %v", fx.name, v, errX, errY)
			}
			if !bytes.Equal(x, y) {
				t.Errorf("%s@%s: two encodings differ", fx.name, v)
			}
		}
	}
}

func TestEncodeCompactAndPretty(t *testing.T) {
	p := mustParse(t, "mini", []byte(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/a"}]}}`))
	compact, err := Encode(&p.Config, V3_2, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/a"}]}}`; string(compact) != want {
		t.Errorf("compact = %s, want %s (no empty objects)", compact, want)
	}
	pretty, err := Encode(&p.Config, V3_2, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(pretty, []byte("\n  \"ignition\": {\n")) {
		t.Errorf("pretty output is not indented:\n%s", pretty)
	}
}

func TestTranslateRefusesUnknownTarget(t *testing.T) {
	for _, v := range []Version{{2, 3, 0}, {2, 4, 0}, {3, 7, 0}, {1, 0, 0}} {
		_, err := translateTo(&Config{}, v)
		var ue *UnsupportedVersionError
		if !errors.As(err, &ue) || !ue.Output || !strings.Contains(err.Error(), "3.6.0") {
			t.Errorf("translateTo(%s) = %v, want an UnsupportedVersionError listing the outputs", v, err)
		}
	}
}

// A config built in code, not parsed, is validated for the target spec.
func TestTranslateValidatesOutput(t *testing.T) {
	cfg := Config{Storage: types.Storage{Files: []types.File{{Node: types.Node{Path: "etc/relative"}}}}}
	for _, v := range []Version{V3_0, V3_4, V3_6} {
		_, err := translateTo(&cfg, v)
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Version != v || len(ie.Problems) == 0 || ie.Problems[0].Path.String() != "$.storage.files.0.path" {
			t.Errorf("translateTo %s = %v, want an InvalidError for %s at $.storage.files.0.path", v, err, v)
		}
	}
}

// translate leaves its input alone (2.2 and 3.0 take every step).
func TestTranslateKeepsInput(t *testing.T) {
	for _, fx := range fixtures(t) {
		p := mustParse(t, fx.name, fx.raw)
		before, err := Marshal(p.Config, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []Version{V2_2, V3_0} {
			_, _ = translateTo(&p.Config, v)
		}
		after, _ := Marshal(p.Config, false)
		if !bytes.Equal(before, after) {
			t.Errorf("%s: translate changed its input", fx.name)
		}
	}
}

// The server encodes one config for every spec at once: translate shares
// nothing mutable (run with -race).
func TestTranslateConcurrent(t *testing.T) {
	p := parseFeature(t, "spec2-defaults")
	want := map[Version][]byte{}
	for _, v := range OutputVersions {
		b, err := Encode(&p.Config, v, false)
		if err != nil {
			t.Fatal(err)
		}
		want[v] = b
	}
	var wg sync.WaitGroup
	for range 4 {
		for _, v := range OutputVersions {
			wg.Go(func() {
				got, err := Encode(&p.Config, v, false)
				if err != nil || !bytes.Equal(got, want[v]) {
					t.Errorf("concurrent Encode to %s = %s, %v", v, got, err)
				}
			})
		}
	}
	wg.Wait()
}

// Check validates at a newer spec than the one declared, as a reader that
// translates every config up to its own spec does; the checks an older
// spec lacks are found, named for both specs.
func TestEncoderCheck(t *testing.T) {
	noTarget := `{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/x"}]}}`
	for _, c := range []struct {
		name, in string
		at       Version
		want     string // in the error; "" for none
	}{
		{name: "link without a target at 3.5.0", in: noTarget, at: V3_5, want: "invalid spec 3.5.0 config: $.storage.links.0.target: valid in spec 3.2.0 but not in 3.5.0: link target is required"},
		{name: "link without a target at 3.3.0", in: noTarget, at: V3_3, want: "valid in spec 3.2.0 but not in 3.3.0: link target is required"},
		{name: "link without a target at its own spec", in: noTarget, at: V3_2},
		{name: "merge without a source at 3.1.0", in: `{"ignition":{"version":"3.0.0","config":{"merge":[{"verification":{}}]}}}`, at: V3_1, want: "$.ignition.config.merge.0: valid in spec 3.0.0 but not in 3.1.0: source is required"},
		{name: "valid at every spec", in: `{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/x","target":"/y"}]}}`, at: V3_5},
		{name: "a 3.6.0 config at 3.5.0", in: `{"ignition":{"version":"3.6.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}}]}}`, at: V3_5},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParseDeclared([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			err = NewEncoder(p.Config, false).Validating(&ValidItems{}).Check(c.at, p.Version)
			var ie *InvalidError
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Check(%s): %v", c.at, err)
			case c.want != "" && (!errors.As(err, &ie) || ie.Version != c.at || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Check(%s): %v; want an *InvalidError saying %q", c.at, err, c.want)
			}
		})
	}
}
