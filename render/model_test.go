package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Fields this package does not model survive a read and a write: an older
// reader must never drop or reject what a newer API added.
func TestMachineConfigKeepsUnknownFields(t *testing.T) {
	in := `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig",` +
		`"metadata":{"name":"x","labels":{"a":"b"},"uid":"123","ownerReferences":[{"kind":"ControllerConfig"}]},` +
		`"spec":{"config":{"ignition":{"version":"3.2.0"}},"kernelArguments":["a"],"futureField":{"enabled":true},"kernelType":"realtime"},` +
		`"status":{"observedGeneration":2}}`
	var mc MachineConfig
	if err := json.Unmarshal([]byte(in), &mc); err != nil {
		t.Fatal(err)
	}
	if mc.Metadata.Name != "x" || mc.Spec.KernelType != "realtime" || string(mc.Spec.Config) != `{"ignition":{"version":"3.2.0"}}` {
		t.Fatalf("decoded %+v", mc)
	}
	out, err := json.Marshal(mc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"uid":"123"`, `"ownerReferences":[{"kind":"ControllerConfig"}]`, `"futureField":{"enabled":true}`, `"status":{"observedGeneration":2}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lost %s: %s", want, out)
		}
	}
	var again MachineConfig
	if err := json.Unmarshal(out, &again); err != nil {
		t.Fatal(err)
	}
	out2, _ := json.Marshal(again)
	if string(out2) != string(out) {
		t.Errorf("not stable:\n%s\n%s", out, out2)
	}
}

// The spec is written as upstream's API writes it: every field present.
func TestMachineConfigSpecAllFields(t *testing.T) {
	b, err := json.Marshal(MachineConfigSpec{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"osImageURL":"","baseOSExtensionsContainerImage":"","config":null,"kernelArguments":null,"extensions":null,"fips":false,"kernelType":""}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestMachineConfigDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in, path string
	}{
		{"kernelArguments not a list", `{"spec":{"kernelArguments":"nosmt"}}`, "$.spec.kernelArguments"},
		{"a kernel argument not a string", `{"spec":{"kernelArguments":["a",1]}}`, "$.spec.kernelArguments"},
		{"fips not a boolean", `{"spec":{"fips":"yes"}}`, "$.spec.fips"},
		{"labels not strings", `{"metadata":{"labels":{"a":1}}}`, "$.metadata.labels"},
		{"spec a list", `{"spec":[]}`, "$.spec"},
		{"duplicate key", `{"spec":{"fips":true,"fips":false}}`, "$.spec.fips"},
		{"not an object", `[]`, "$"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mc MachineConfig
			err := json.Unmarshal([]byte(tc.in), &mc)
			var fe *fieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Path.String(), tc.path) {
				t.Fatalf("error %v, want one at %s", err, tc.path)
			}
		})
	}
}

func TestNullsReadAsZero(t *testing.T) {
	var mc MachineConfig
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"x","labels":null},"spec":{"config":null,"kernelArguments":null,"extensions":null}}`), &mc); err != nil {
		t.Fatal(err)
	}
	if mc.Spec.Config != nil || mc.Spec.KernelArguments != nil || mc.Metadata.Labels != nil {
		t.Errorf("decoded %+v", mc)
	}
}

// FuzzMachineConfigJSON: whatever decodes must encode, and decode again to
// the same bytes.
func FuzzMachineConfigJSON(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"x"},"spec":{}}`,
		`{"metadata":{"name":"x","uid":"1","labels":{"a":"b"}},"spec":{"config":{"ignition":{"version":"3.2.0"}},"x":[1,2]},"status":{}}`,
		`{"spec":{"config":"not an object","kernelArguments":["a"]}}`,
		`{"metadata":null,"spec":null}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var mc MachineConfig
		if err := json.Unmarshal(in, &mc); err != nil {
			return
		}
		out, err := json.Marshal(mc)
		if err != nil {
			t.Fatalf("decoded but cannot encode: %v", err)
		}
		var again MachineConfig
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("own output does not decode: %v\n%s", err, out)
		}
		out2, err := json.Marshal(again)
		if err != nil || string(out2) != string(out) {
			t.Fatalf("not stable (%v):\n%s\n%s", err, out, out2)
		}
	})
}

// MarshalRendered writes a render's MachineConfig as MarshalJSON does, byte
// for byte: the renderer's config is compact and HTML-escaped already.
func TestMarshalRenderedIsMarshalJSON(t *testing.T) {
	html := setOf(t, doc("50-html", "worker", file("/etc/<html>&\u2028", "data:,a&b"), `kernelArguments: ["a<b"]`))
	for _, tc := range []struct {
		name string
		set  *Set
		pool string
	}{{"aws worker", loadRealdata(t, "aws"), "worker"}, {"aws master", loadRealdata(t, "aws"), "master"}, {"HTML characters", html, "worker"}} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustRender(t, tc.set, tc.pool, Options{})
			mc := *res.MachineConfig
			mc.Metadata.Extra = map[string]json.RawMessage{"ownerReferences": json.RawMessage(`[{"name":"<pool>"}]`)}
			mc.Extra = map[string]json.RawMessage{"status": json.RawMessage(`{ "a": "<&>" }`)}
			mc.Spec.Extra = map[string]json.RawMessage{"newField": json.RawMessage(`{"x": "<&>"}`)}
			want, err := mc.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			got, err := mc.MarshalRendered()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("MarshalRendered differs from MarshalJSON:\n got  %.300s\n want %.300s", got, want)
			}
			if !bytes.Contains(want, []byte(`\u003c`)) && tc.name == "HTML characters" {
				t.Errorf("no escaped HTML in %s", want)
			}
		})
	}
}
