package kube

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
)

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		err  bool
	}{
		{"", ModeSelf, false},
		{"self", ModeSelf, false},
		{"pool", ModePool, false},
		{"Pool", "", true},
		{"cluster", "", true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMode(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("ParseMode(%q) = %q, %v", tc.in, got, err)
			}
		})
	}
}

func poolObject(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	return u
}

// The choice is upstream's: the target once a machine has updated to it.
func TestRenderedConfig(t *testing.T) {
	const head = `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","metadata":{"name":"worker"},`
	for _, tc := range []struct {
		name, body  string
		want        string
		wantSources string
		wantErr     string
	}{
		{"settled", `"spec":{"configuration":{"name":"rendered-worker-b","source":[{"name":"00-worker"},{"name":"99-worker-ssh"}]}},"status":{"updatedMachineCount":3,"configuration":{"name":"rendered-worker-b"}}}`,
			"rendered-worker-b", "00-worker 99-worker-ssh", ""},
		{"update started, no machine done", `"spec":{"configuration":{"name":"rendered-worker-b"}},"status":{"updatedMachineCount":0,"configuration":{"name":"rendered-worker-a"}}}`,
			"rendered-worker-a", "", ""},
		{"update under way", `"spec":{"configuration":{"name":"rendered-worker-b","source":[{"name":"x"}]}},"status":{"updatedMachineCount":1,"configuration":{"name":"rendered-worker-a"}}}`,
			"rendered-worker-b", "x", ""},
		{"count as float", `"spec":{"configuration":{"name":"rendered-worker-b"}},"status":{"updatedMachineCount":2.0,"configuration":{"name":"rendered-worker-a"}}}`,
			"rendered-worker-b", "", ""},
		{"no status yet", `"spec":{"configuration":{"name":"rendered-worker-b"}}}`,
			"rendered-worker-b", "", ""},
		{"nothing named", `"spec":{}}`, "", "", "$.status.configuration.name: the pool names no rendered MachineConfig"},
		{"count not a number", `"status":{"updatedMachineCount":"3"}}`, "", "", "$.status.updatedMachineCount: want an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, sources, err := renderedConfig(poolObject(t, head+tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || name != tc.want || strings.Join(sources, " ") != tc.wantSources {
				t.Fatalf("got %q %v %v, want %q %q", name, sources, err, tc.want, tc.wantSources)
			}
		})
	}
}

func renderedMC(t *testing.T, config string) *render.MachineConfig {
	t.Helper()
	js := `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig",
	"metadata":{"name":"rendered-worker-0123","uid":"u-1","annotations":{"machineconfiguration.openshift.io/generated-by-controller-version":"abc"},
	  "ownerReferences":[{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","name":"worker","uid":"p-1"}]},
	"spec":{"osImageURL":"quay.io/os@sha256:1","config":` + config + `,"kernelArguments":["nosmt"],"extensions":[],"fips":false,"kernelType":"default","newField":{"x":1}}}`
	mc := &render.MachineConfig{Source: Origin}
	if err := json.Unmarshal([]byte(js), mc); err != nil {
		t.Fatal(err)
	}
	return mc
}

func TestRendered(t *testing.T) {
	const file = `"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"},"mode":420}]}`
	for _, tc := range []struct {
		name    string
		config  string
		opts    render.Options
		want    string // the re-encoded config
		wantErr error
		errHas  string
	}{
		{"3.5 down to the floor", `{"ignition":{"version":"3.5.0"},` + file + `}`, render.Options{},
			`{"ignition":{"version":"3.0.0"},` + file + `}`, nil, ""},
		{"kernel arguments need 3.3", `{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["a"]}}`, render.Options{},
			`{"ignition":{"version":"3.3.0"},"kernelArguments":{"shouldExist":["a"]}}`, nil, ""},
		{"floor raised", `{"ignition":{"version":"3.5.0"}}`, render.Options{MinSpec: convert.V3_2},
			`{"ignition":{"version":"3.2.0"}}`, nil, ""},
		{"forced spec 2", `{"ignition":{"version":"3.4.0"},` + file + `}`, render.Options{Spec: convert.V2_2},
			`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","overwrite":false,"path":"/etc/a","contents":{"source":"data:,a"},"mode":420}]}}`, nil, ""},
		{"spec 2 input", `{"ignition":{"version":"2.2.0"}}`, render.Options{},
			`{"ignition":{"version":"3.0.0"}}`, nil, ""},
		{"null config", `null`, render.Options{}, `{"ignition":{"version":"3.0.0"}}`, nil, ""},
		{"above the ceiling", `{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["a"]}}`, render.Options{MaxSpec: convert.V3_2},
			"", render.ErrSpecCeiling, "pool worker needs spec 3.3.0, above the ceiling 3.2.0"},
		{"invalid", `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"relative"}]}}`, render.Options{},
			"", render.ErrInvalid, "kubernetes: MachineConfig/rendered-worker-0123: $.spec.config:"},
		{"bad options", `{"ignition":{"version":"3.5.0"}}`, render.Options{MinSpec: convert.V3_4, MaxSpec: convert.V3_1},
			"", render.ErrOptions, "below minimum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc := renderedMC(t, tc.config)
			res, err := Rendered("worker", mc, tc.opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want %v containing %q", err, tc.wantErr, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.MachineConfig.Spec.Config); got != tc.want {
				t.Errorf("config\n got %s\nwant %s", got, tc.want)
			}
			if res.Spec.String() != gjsonVersion(t, tc.want) {
				t.Errorf("Spec %s, config says %s", res.Spec, gjsonVersion(t, tc.want))
			}
			// Everything but the config is the cluster's.
			if res.Name != "rendered-worker-0123" || res.MachineConfig.Metadata.Name != res.Name || res.Pool != "worker" {
				t.Errorf("names %q %q %q", res.Name, res.MachineConfig.Metadata.Name, res.Pool)
			}
			out, _ := json.Marshal(res.MachineConfig)
			for _, keep := range []string{`"uid":"u-1"`, `"ownerReferences"`, `"machineconfiguration.openshift.io/generated-by-controller-version":"abc"`, `"osImageURL":"quay.io/os@sha256:1"`, `"kernelArguments":["nosmt"]`, `"newField":{"x":1}`} {
				if !strings.Contains(string(out), keep) {
					t.Errorf("re-encoded MachineConfig lost %s: %s", keep, out)
				}
			}
			// The input is not modified: the informer cache holds it.
			if string(mc.Spec.Config) != strings.TrimSpace(tc.config) && tc.config != "null" {
				t.Errorf("input changed to %s", mc.Spec.Config)
			}
		})
	}
}

func gjsonVersion(t *testing.T, js string) string {
	t.Helper()
	var v struct{ Ignition struct{ Version string } }
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	return v.Ignition.Version
}

// FuzzRendered: any config either fails cleanly or re-encodes losslessly,
// at a spec within the bounds.
func FuzzRendered(f *testing.F) {
	for _, seed := range []string{
		`{"ignition":{"version":"3.5.0"}}`,
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}}]}}`,
		`{"ignition":{"version":"3.4.0"},"kernelArguments":{"shouldExist":["a"],"shouldNotExist":["b"]}}`,
		`{"ignition":{"version":"2.2.0"},"systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Unit]"}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"luks":[{"name":"root","device":"/dev/sda","clevis":{"tpm2":true}}]}}`,
		`{"ignition":{"version":"3.6.0"},"storage":{"directories":[{"path":"/d","mode":1023}]}}`,
		`null`, `{}`, `[]`, `"x"`,
	} {
		f.Add([]byte(seed), uint8(0))
	}
	floors := []convert.Version{{}, convert.V3_1, convert.V3_4}
	f.Fuzz(func(t *testing.T, config []byte, floor uint8) {
		if !json.Valid(config) {
			return
		}
		mc := &render.MachineConfig{Metadata: render.ObjectMeta{Name: "rendered-x"}, Spec: render.MachineConfigSpec{Config: config}}
		opts := render.Options{MinSpec: floors[int(floor)%len(floors)]}
		res, err := Rendered("x", mc, opts)
		if err != nil {
			return
		}
		if res.Spec.Less(res.Options.MinSpec) || res.Options.MaxSpec.Less(res.Spec) || res.Spec.Less(res.MinSpec) {
			t.Fatalf("spec %s outside [%s, %s] or below the need %s", res.Spec, res.Options.MinSpec, res.Options.MaxSpec, res.MinSpec)
		}
		back, err := convert.Parse(res.MachineConfig.Spec.Config)
		if err != nil {
			t.Fatalf("re-encoded config does not parse: %v\n%s", err, res.MachineConfig.Spec.Config)
		}
		a, err1 := convert.Encode(&res.Config, convert.Newest, false)
		b, err2 := convert.Encode(&back.Config, convert.Newest, false)
		if err1 != nil || err2 != nil || string(a) != string(b) {
			t.Fatalf("re-encoding changed the config (%v %v):\n%s\n%s", err1, err2, a, b)
		}
	})
}

// FuzzRenderedConfig: any pool object yields a name or a located error.
func FuzzRenderedConfig(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"w"},"spec":{"configuration":{"name":"a"}},"status":{"updatedMachineCount":1,"configuration":{"name":"b","source":[{"name":"x"}]}}}`,
		`{"status":{"updatedMachineCount":"1"}}`,
		`{"spec":{"configuration":{"source":[1,{"name":2},{"name":"y"}]}}}`,
		`{"spec":[],"status":null}`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON(data) != nil {
			return
		}
		name, _, err := renderedConfig(u)
		if (name == "") == (err == nil) {
			t.Fatalf("name %q, err %v", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "$.") {
			t.Fatalf("error without a path: %v", err)
		}
	})
}

func BenchmarkRendered(b *testing.B) {
	set, err := render.Load(clusterDir("aws"))
	if err != nil {
		b.Skip(err)
	}
	res, err := set.RenderPool("worker", render.Options{})
	if err != nil {
		b.Fatal(err)
	}
	mc := *res.MachineConfig
	if mc.Spec.Config, err = convert.Encode(&res.Config, convert.V3_5, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Rendered("worker", &mc, render.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
