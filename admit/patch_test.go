package admit

import (
	"encoding/json"
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/ignition-mcs/mcs/convert"
)

func TestMinimalPatch(t *testing.T) {
	whole := func(stored string) string {
		return `[{"op":"replace","path":"/spec/config","value":` + stored + `}]`
	}
	for _, c := range []struct {
		name, sent, stored, want string
	}{
		{"version", `{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core"}]}}`,
			`{"passwd":{"users":[{"name":"core"}]},"ignition":{"version":"3.0.0"}}`,
			`[{"op":"replace","path":"/spec/config/ignition/version","value":"3.0.0"}]`},
		{"members removed", `{"ignition":{"config":{},"version":"3.5.0"},"storage":{},"systemd":{"units":[]}}`,
			`{"ignition":{"version":"3.0.0"}}`,
			`[{"op":"remove","path":"/spec/config/ignition/config"},{"op":"replace","path":"/spec/config/ignition/version","value":"3.0.0"},{"op":"remove","path":"/spec/config/storage"},{"op":"remove","path":"/spec/config/systemd"}]`},
		{"lists whole", `{"storage":{"files":[{"path":"/a","contents":{"verification":{}}},{"path":"/b"}]}}`,
			`{"storage":{"files":[{"path":"/a"},{"path":"/b"}]}}`,
			`[{"op":"replace","path":"/spec/config/storage/files","value":[{"path":"/a"},{"path":"/b"}]}]`},
		{"the same value otherwise written", `{"storage":{"files":[{"path":"/a<b","mode":420}]}}`,
			`{"storage":{"files":[{"mode":420,"path":"/a\u003cb"}]}}`, `[]`},
		{"members added, in stored's order", `{"ignition":{"version":"3.1.0"}}`, `{"z":null,"ignition":{"version":"3.1.0"},"a":{"b":[]}}`,
			`[{"op":"add","path":"/spec/config/z","value":null},{"op":"add","path":"/spec/config/a","value":{"b":[]}}]`},
		{"names escaped", `{"a/b":{"c~d":1,"":2},"\u00e9\"":1}`, `{"a/b":{"c~d":3},"\u00e9\"":"x"}`,
			`[{"op":"replace","path":"/spec/config/a~1b/c~0d","value":3},{"op":"remove","path":"/spec/config/a~1b/"},{"op":"replace","path":"/spec/config/é\"","value":"x"}]`},
		{"an object for a value", `{"a":{"b":1}}`, `{"a":1}`, `[{"op":"replace","path":"/spec/config/a","value":1}]`},
		{"a number as written", `{"a":1.0}`, `{"a":1}`, `[{"op":"replace","path":"/spec/config/a","value":1}]`},
		{"not an object", `{"a":1}`, `[]`, whole(`[]`)},
		{"nothing sent", ``, `{"a":1}`, whole(`{"a":1}`)},
		{"a name twice in the sent", `{"a":{"b":1,"b":2}}`, `{"a":{"b":2}}`, whole(`{"a":{"b":2}}`)},
		{"a name twice in the stored", `{"a":1}`, `{"a":1,"a":2}`, whole(`{"a":1,"a":2}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := patchConfig([]byte(c.stored), changedFields([]byte(c.sent), []byte(c.stored)), nil, nil)
			if string(got) != c.want {
				t.Errorf("patch %s\nwant  %s", got, c.want)
			}
			if c.sent != "" {
				checkMinimalPatch(t, []byte(c.sent), []byte(c.stored))
			}
		})
	}
}

// checkMinimalPatch applies the patch storing stored for a MachineConfig
// whose spec.config is sent, and the whole replace of spec.config with
// stored, with the API server's own JSON patch (k8s.io/apiserver's
// mutating dispatcher's): both must store the same JSON value.
func checkMinimalPatch(t testing.TB, sent, stored []byte) {
	t.Helper()
	obj := []byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"m"},"spec":{"config":` + string(sent) + `,"fips":false}}`)
	d := changedFields(sent, stored)
	minimal, err := applyPatch(obj, patchConfig(stored, d, nil, nil))
	if err != nil {
		t.Fatalf("the minimal patch: %v\nsent:   %s\nstored: %s", err, sent, stored)
	}
	full, err := applyPatch(obj, patchConfig(stored, configDiff{whole: true}, nil, nil))
	if err != nil {
		t.Fatalf("the whole patch: %v\nsent:   %s\nstored: %s", err, sent, stored)
	}
	if mv, fv := decodeValue(minimal), decodeValue(full); mv == nil || !reflect.DeepEqual(mv, fv) {
		t.Fatalf("the minimal patch stores another object than the whole one\nsent:    %s\nstored:  %s\npatch:   %s\nminimal: %s\nwhole:   %s",
			sent, stored, patchConfig(stored, d, nil, nil), minimal, full)
	}
}

// applyPatch applies a JSON patch to obj as the API server does.
func applyPatch(obj, patch []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	return p.Apply(obj)
}

// reencoded is a JSON value as the API server sends it to a webhook:
// decoded and encoded again, members sorted.
func reencoded(tb testing.TB, raw []byte) []byte {
	tb.Helper()
	v := decodeValue(raw)
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// checkLoweringPatches is checkMinimalPatch of a lowering, for the config
// sent as written and as the API server re-encodes it.
func checkLoweringPatches(tb testing.TB, sent []byte, res *Result) {
	tb.Helper()
	checkMinimalPatch(tb, sent, res.Config)
	if re := reencoded(tb, sent); re != nil {
		checkMinimalPatch(tb, re, res.Config)
	}
}

// TestMinimalPatchRealdata checks the patches of OpenShift's rendered and
// generated configs of the real data, lowered: the minimal one stores what
// the whole one does, and is a fraction of its size.
func TestMinimalPatchRealdata(t *testing.T) {
	for _, set := range []string{"aws", "none"} {
		for _, pool := range []string{"master", "worker"} {
			t.Run(set+"/"+pool, func(t *testing.T) {
				mc := realdataRendered(t, set, pool)
				res, err := Lower(mc.Spec.Config, convert.V3_4)
				if err != nil || !res.Changed() {
					t.Fatalf("not lowered: %v", err)
				}
				checkLoweringPatches(t, mc.Spec.Config, res)
				sent := reencoded(t, mc.Spec.Config)
				d := changedFields(sent, res.Config)
				if min, whole := patchConfig(res.Config, d, nil, nil), patchConfig(res.Config, configDiff{whole: true}, nil, nil); d.whole || len(min)*10 > len(whole) {
					t.Errorf("a minimal patch of %d bytes (whole: %v), the whole one %d: %.300s", len(min), d.whole, len(whole), min)
				}
			})
		}
	}
}

// FuzzMinimalPatch: the patch taking spec.config from a to b, applied by
// the API server's JSON patch, stores b as a JSON value (numbers as
// written); it never fails where both are JSON.
func FuzzMinimalPatch(f *testing.F) {
	f.Add([]byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a"}]}}`), []byte(`{"storage":{"files":[{"path":"/a"}]},"ignition":{"version":"3.4.0"}}`))
	f.Add([]byte(`{"a/b":{"c~d":1,"":2},"\u00e9":null}`), []byte(`{"a/b":{"c~d":3},"x":{"y":[1]}}`))
	f.Add([]byte(`{"a":{"b":1,"b":2}}`), []byte(`{"a":{"b":2},"c":1.0}`))
	f.Add([]byte(`{"a":1}`), []byte(`[]`))
	f.Add([]byte(kargs35), []byte(`{"ignition":{"version":"3.3.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`))
	// The corpus's first configs lowered, as sent and as re-encoded.
	for _, c := range corpus(32) {
		if res, err := Lower(c.raw, c.ceiling); err == nil && res.Changed() {
			f.Add(c.raw, res.Config)
			f.Add(reencoded(f, c.raw), res.Config)
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if !json.Valid(a) || !json.Valid(b) {
			changedFields(a, b) // reads anything without a panic
			return
		}
		d := changedFields(a, b)
		out, err := applyPatch([]byte(`{"metadata":{},"spec":{"config":`+string(a)+`}}`), patchConfig(b, d, nil, nil))
		if err != nil {
			t.Fatalf("applying the patch from %s to %s: %v", a, b, err)
		}
		var o struct {
			Spec struct{ Config json.RawMessage }
		}
		if err := json.Unmarshal(out, &o); err != nil {
			t.Fatal(err)
		}
		if got, want := decodeValue(o.Spec.Config), decodeValue(b); !reflect.DeepEqual(got, want) {
			t.Errorf("patched %s with %s: %s, want %s", a, patchConfig(b, d, nil, nil), o.Spec.Config, b)
		}
	})
}
