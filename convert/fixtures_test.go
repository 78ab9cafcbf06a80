package convert

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/internal/shareddata"
)

var (
	update = flag.Bool("update", false, "rewrite golden files, and the copies of shared fixtures when -shared exists")
	shared = flag.String("shared", "", "directory holding realdata/ and mco-testdata/, copied into testdata/ by -update (default: ../shared beside the clone, or $MCS_SHARED)")
)

// fixture is one config the round-trip, golden and fuzz tests run over.
type fixture struct {
	name string // path under testdata
	raw  []byte
}

// fixtures returns every config under testdata: one per spec feature
// (features/), OpenShift's MachineConfigs (realdata/, the spec.config of
// each) and the MCO's own test fixtures (mco/, some gzipped or base64'd).
func fixtures(tb testing.TB) []fixture {
	tb.Helper()
	var out []fixture
	for _, pattern := range []string{"testdata/features/*.ign", "testdata/realdata/*/*.json", "testdata/mco/*"} {
		names, err := filepath.Glob(pattern)
		if err != nil {
			tb.Fatal(err)
		}
		for _, name := range names {
			raw, err := os.ReadFile(name)
			if err != nil {
				tb.Fatal(err)
			}
			raw, err = decodeFixture(raw)
			if err != nil {
				tb.Fatalf("%s: %v", name, err)
			}
			out = append(out, fixture{strings.TrimPrefix(name, "testdata/"), raw})
		}
	}
	if len(out) == 0 {
		tb.Fatal("no fixtures under testdata")
	}
	return out
}

// decodeFixture undoes the gzip (and base64 around it) the MCO's fixtures use.
func decodeFixture(raw []byte) ([]byte, error) {
	if b, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(raw))); err == nil && len(b) > 2 {
		raw = b
	}
	if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	}
	return raw, nil
}

func mustParse(tb testing.TB, name string, raw []byte) *Parsed {
	tb.Helper()
	p, err := Parse(raw)
	if err != nil {
		tb.Fatalf("%s: Parse: %v", name, err)
	}
	return p
}

// parseFeature parses testdata/features/name.ign.
func parseFeature(tb testing.TB, name string) *Parsed {
	tb.Helper()
	raw, err := os.ReadFile("testdata/features/" + name + ".ign")
	if err != nil {
		tb.Fatal(err)
	}
	return mustParse(tb, name, raw)
}

// TestSharedFixtures keeps testdata's copies of the shared fixtures, so that
// the tests run on a machine without them: with -update it rewrites the
// copies from -shared, and it always checks that every copy parses.
func TestSharedFixtures(t *testing.T) {
	if *update {
		refreshShared(t)
	}
	for _, fx := range fixtures(t) {
		t.Run(fx.name, func(t *testing.T) { mustParse(t, fx.name, fx.raw) })
	}
}

func refreshShared(t *testing.T) {
	if *shared == "" {
		root, err := shareddata.Root()
		if err != nil {
			t.Logf("not refreshing shared fixtures: %v", err)
			return
		}
		*shared = root
	}
	if _, err := os.Stat(*shared); err != nil {
		t.Logf("not refreshing shared fixtures: %v", err)
		return
	}
	docs, err := filepath.Glob(filepath.Join(*shared, "realdata", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(*shared, "mco-testdata", "*", "*.yaml"))
	more2, _ := filepath.Glob(filepath.Join(*shared, "mco-testdata", "*", "*", "*.yaml"))
	docs = slices.Concat(docs, more, more2)
	for _, src := range docs {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		var mc struct {
			Kind string `json:"kind"`
			Spec struct {
				Config json.RawMessage `json:"config"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &mc); err != nil || mc.Kind != "MachineConfig" || len(mc.Spec.Config) == 0 || string(mc.Spec.Config) == "null" {
			continue
		}
		rel, _ := filepath.Rel(*shared, src)
		dir, base := "testdata/mco", filepath.Base(src)
		if parts := strings.Split(rel, string(filepath.Separator)); parts[0] == "realdata" {
			dir = filepath.Join("testdata/realdata", parts[1])
		}
		writeFile(t, filepath.Join(dir, strings.TrimSuffix(base, ".yaml")+".json"), append(redactPullSecret(t, mc.Spec.Config), '\n'))
	}
	gz, _ := filepath.Glob(filepath.Join(*shared, "mco-testdata", "common-fixtures", "*"))
	for _, src := range gz {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join("testdata/mco", filepath.Base(src)), b)
	}
}

// pullSecretPath holds the cluster's registry credentials in the MCO's base
// config: the copies under testdata carry a placeholder instead.
const pullSecretPath = "/var/lib/kubelet/config.json"

func redactPullSecret(t *testing.T, cfg []byte) []byte {
	var tree map[string]any
	if err := json.Unmarshal(cfg, &tree); err != nil {
		t.Fatal(err)
	}
	storage, _ := tree["storage"].(map[string]any)
	files, _ := storage["files"].([]any)
	redacted := false
	for _, f := range files {
		if f, _ := f.(map[string]any); f["path"] == pullSecretPath {
			f["contents"] = map[string]any{"source": "data:," + url.PathEscape(`{"auths":{"registry.example.com":{"auth":"cmVkYWN0ZWQ6cmVkYWN0ZWQ="}}}`)}
			redacted = true
		}
	}
	if !redacted {
		return cfg
	}
	out, err := json.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
