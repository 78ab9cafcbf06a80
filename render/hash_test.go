package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/shareddata"
)

// The name is over sigs.k8s.io/yaml's YAML of the spec; specYAML builds the
// same bytes without re-parsing, and the render builds them with the large
// contents swapped out. All must agree on every real config.
func TestSpecYAMLMatchesLibrary(t *testing.T) {
	sets := []string{filepath.Join("..", "fixtures", "cluster")}
	features, _ := filepath.Glob(filepath.Join("..", "fixtures", "features", "*"))
	if len(features) == 0 {
		t.Fatal("no fixtures/features")
	}
	sets = append(sets, features...)
	for _, name := range []string{"aws", "none"} {
		if d, ok := shareddata.Optional(t, "realdata", name); ok {
			sets = append(sets, d)
		}
	}
	for _, dir := range sets {
		s, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []Options{{}, {Spec: convert.V3_5}} {
			results := renderAll(t, s, opts)
			var items yamlItems // shared by the pools, as a set's renders share it
			for _, r := range results {
				fast, err := specYAML(r.MachineConfig.Spec)
				if err != nil {
					t.Fatal(err)
				}
				slow, err := slowSpecYAML(r.MachineConfig.Spec)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(fast, slow) {
					t.Errorf("%s pool %s: fast and library YAML differ", dir, r.Pool)
				}
				if byItem, err := items.specYAML(r.MachineConfig.Spec, convert.Restorer{}); err != nil || !bytes.Equal(byItem, slow) {
					t.Errorf("%s pool %s: YAML written item by item and the library's differ (%v)", dir, r.Pool, err)
				}
				// The render writes the config and the YAML of its name with the
				// large contents swapped out (convert.Placeholders): the same
				// bytes and name as without.
				// (Directory modes written back as written are the encoder's
				// alone: TestUpstreamDirectorySpecialBits checks those.)
				direct, err := convert.Encode(&r.Config, r.Spec, false)
				if err != nil {
					t.Fatal(err)
				}
				if len(r.WrittenModes) == 0 && !bytes.Equal(direct, r.MachineConfig.Spec.Config) {
					t.Errorf("%s pool %s: the rendered config differs from encoding the merged config", dir, r.Pool)
				}
				if name, err := hashedName(r.Pool, r.MachineConfig.Spec, nil, nil); err != nil || name != r.Name {
					t.Errorf("%s pool %s: rendered as %s, its spec hashes to %s (%v)", dir, r.Pool, r.Name, name, err)
				}
			}
		}
	}
}

// renderAll renders every pool of s. Each must render, except that at a
// forced spec a pool needing a newer one fails with the ceiling error alone.
func renderAll(t *testing.T, s *Set, opts Options) []*Result {
	t.Helper()
	var out []*Result
	for _, pool := range s.PoolNames() {
		r, err := s.RenderPool(pool, opts)
		if err == nil {
			out = append(out, r)
			continue
		}
		var errs *Errors
		if opts.Spec.IsZero() || !errors.As(err, &errs) {
			t.Fatalf("pool %s %+v: %v", pool, opts, err)
		}
		for _, e := range errs.List {
			if !errors.Is(e, ErrSpecCeiling) {
				t.Fatalf("pool %s %+v: %v", pool, opts, e)
			}
		}
	}
	return out
}

func TestHashedNameStable(t *testing.T) {
	spec := MachineConfigSpec{Config: json.RawMessage(`{"ignition":{"version":"3.5.0"}}`), KernelArguments: []string{}, Extensions: []string{}, KernelType: "default"}
	a, err := hashedName("worker", spec, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := hashedName("worker", spec, nil, nil)
	c, _ := hashedName("infra", spec, nil, nil)
	spec.FIPS = true
	d, _ := hashedName("worker", spec, nil, nil)
	if a != b || len(a) != len("rendered-worker-")+32 || c[len("rendered-infra-"):] != a[len("rendered-worker-"):] || d == a {
		t.Errorf("names %s %s %s %s", a, b, c, d)
	}
}

// FuzzSpecYAML: for any JSON config and spec fields, the fast YAML equals
// the library's.
func FuzzSpecYAML(f *testing.F) {
	f.Add([]byte(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/a","mode":420,"contents":{"source":"data:,a%20b"}}]}}`), "nosmt", "quay.io/x@sha256:1", true)
	f.Add([]byte(`{"a":"line one\nline two\n","b":" leading space","c":"trailing ","d":"yes","e":"0123","f":"-","g":"#x","h":"a: b","i":[],"j":{},"k":null,"l":1.5,"m":1e3,"n":-7}`), "", "", false)
	f.Add([]byte(`{"long":"`+string(bytes.Repeat([]byte("word "), 40))+`","tab":"a\tb","uni":"é ☃ \u2028","q":"'\"","colon":"x:y","emptyline":"a\n\nb"}`), "a b", "", false)
	f.Add([]byte(`null`), "", "", false)
	f.Add([]byte(`{"storage":{"files":[{"path":"/a","contents":{"source":"data:,x"}},{"path":"/b","mode":493,"x":[1,{"y":"a\nb"}]},"str",null,[],{}],"links":[{"path":"/l"}]},"systemd":{"units":[{"name":"a.service","contents":"[Unit]\nA=b\n\n[Install]\nWantedBy=x\n","enabled":true},{"name":"b.mount","dropins":[{"name":"x.conf","contents":" lead"}]}]}}`), "", "", false)
	f.Add([]byte(`{"storage":{"files":[]},"systemd":{"units":null},"ignition":{"version":"3.2.0"}}`), "", "", false)
	f.Add([]byte(`{"storage":[1],"systemd":"x","z":{"files":[{"a":1}]}}`), "", "", false)
	f.Add([]byte(`{"storage":{"files":[{"path":"/a","mode":1.5}]}}`), "", "", false)
	f.Add([]byte(`{"storage":{"files":[{"a":1},]}}`), "", "", false)
	f.Add([]byte(`{"storage":{"files":[{"a":[1}]}]}}`), "", "", false)
	var items yamlItems // shared by every input: an item's YAML is kept from one to the next
	f.Fuzz(func(t *testing.T, cfg []byte, karg, image string, fips bool) {
		if !json.Valid(cfg) {
			// Never a name for what is not JSON (none is null), item by item either.
			if y, err := items.specYAML(MachineConfigSpec{Config: cfg}, convert.Restorer{}); err == nil && len(cfg) > 0 {
				t.Fatalf("YAML for invalid JSON %q:\n%s", cfg, y)
			}
			return
		}
		var compact bytes.Buffer
		if json.Compact(&compact, cfg) != nil {
			return
		}
		spec := MachineConfigSpec{Config: compact.Bytes(), KernelArguments: []string{karg}, OSImageURL: image, FIPS: fips, KernelType: "default"}
		if karg == "" {
			spec.KernelArguments = nil
		}
		fast, err := specYAML(spec)
		if err != nil {
			return
		}
		slow, err := slowSpecYAML(spec)
		if err != nil {
			t.Fatalf("library fails where the fast path does not: %v", err)
		}
		if !bytes.Equal(fast, slow) {
			t.Fatalf("fast and library YAML differ\nfast:\n%s\nlibrary:\n%s", fast, slow)
		}
		byItem, err := items.specYAML(spec, convert.Restorer{})
		if err != nil || !bytes.Equal(byItem, slow) {
			t.Fatalf("item by item (%v) and library YAML differ\nitem by item:\n%s\nlibrary:\n%s", err, byItem, slow)
		}
	})
}
