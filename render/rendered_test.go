package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/shareddata"
)

func renderedMC(t *testing.T, config string) *MachineConfig {
	t.Helper()
	js := `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig",
	"metadata":{"name":"rendered-worker-0123","uid":"u-1","annotations":{"machineconfiguration.openshift.io/generated-by-controller-version":"abc"},
	  "ownerReferences":[{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","name":"worker","uid":"p-1"}]},
	"spec":{"osImageURL":"quay.io/os@sha256:1","config":` + config + `,"kernelArguments":["nosmt"],"extensions":[],"fips":false,"kernelType":"default","newField":{"x":1}}}`
	mc := &MachineConfig{Source: "kubernetes"}
	if err := json.Unmarshal([]byte(js), mc); err != nil {
		t.Fatal(err)
	}
	return mc
}

func TestFromRendered(t *testing.T) {
	const file = `"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"},"mode":420}]}`
	for _, tc := range []struct {
		name    string
		config  string
		opts    Options
		want    string // the re-encoded config
		wantErr error
		errHas  string
	}{
		{"3.5 down to the floor", `{"ignition":{"version":"3.5.0"},` + file + `}`, Options{},
			`{"ignition":{"version":"3.0.0"},` + file + `}`, nil, ""},
		{"kernel arguments need 3.3", `{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["a"]}}`, Options{},
			`{"ignition":{"version":"3.3.0"},"kernelArguments":{"shouldExist":["a"]}}`, nil, ""},
		{"floor raised", `{"ignition":{"version":"3.5.0"}}`, Options{MinSpec: convert.V3_2},
			`{"ignition":{"version":"3.2.0"}}`, nil, ""},
		{"forced spec 2", `{"ignition":{"version":"3.4.0"},` + file + `}`, Options{Spec: convert.V2_2},
			`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","overwrite":false,"path":"/etc/a","contents":{"source":"data:,a"},"mode":420}]}}`, nil, ""},
		{"spec 2 input", `{"ignition":{"version":"2.2.0"}}`, Options{},
			`{"ignition":{"version":"3.0.0"}}`, nil, ""},
		{"null config", `null`, Options{}, `{"ignition":{"version":"3.0.0"}}`, nil, ""},
		{"above the ceiling", `{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["a"]}}`, Options{MaxSpec: convert.V3_2},
			"", ErrSpecCeiling, "pool worker needs spec 3.3.0, above the ceiling 3.2.0"},
		{"invalid", `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"relative"}]}}`, Options{},
			"", ErrInvalid, "kubernetes: MachineConfig/rendered-worker-0123: $.spec.config:"},
		{"bad options", `{"ignition":{"version":"3.5.0"}}`, Options{MinSpec: convert.V3_4, MaxSpec: convert.V3_1},
			"", errOptions, "below minimum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc := renderedMC(t, tc.config)
			res, err := FromRendered("worker", mc, nil, tc.opts)
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

// FuzzFromRendered: any config either fails cleanly or re-encodes losslessly,
// at a spec within the bounds.
func FuzzFromRendered(f *testing.F) {
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
		mc := &MachineConfig{Metadata: ObjectMeta{Name: "rendered-x"}, Spec: MachineConfigSpec{Config: config}}
		opts := Options{MinSpec: floors[int(floor)%len(floors)]}
		res, err := FromRendered("x", mc, nil, opts)
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

func BenchmarkFromRendered(b *testing.B) {
	set, err := Load(benchCluster())
	if err != nil {
		b.Skip(err)
	}
	res, err := set.RenderPool("worker", Options{})
	if err != nil {
		b.Fatal(err)
	}
	mc := *res.MachineConfig
	if mc.Spec.Config, err = convert.Encode(&res.Config, convert.V3_5, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromRendered("worker", &mc, nil, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCluster is the project's realdata set when it is beside the clone
// (full-size), else the in-repo cluster of the same shape.
func benchCluster() string {
	if d, ok := shareddata.Lookup("realdata", "aws"); ok {
		return d
	}
	return "../fixtures/cluster"
}
