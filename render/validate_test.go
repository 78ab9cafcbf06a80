package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/ignition/v2/config/validate"

	"github.com/ignition-mcs/mcs/convert"
)

func TestValidation(t *testing.T) {
	tests := []struct {
		name string
		docs []string
		path string // of the first error
		msg  string
	}{
		{"kernelType", []string{doc("10-a", "worker", "", "kernelType: rt")}, "$.spec.kernelType", `kernelType "rt" is invalid`},
		// Upstream checks extensions only when the config is not empty.
		{"extension without a config", []string{doc("10-a", "worker", "", "extensions: [usbguard, wasm]")}, "$.spec.extensions.1", `extension "wasm" is not supported`},
		{"setuid file", []string{doc("10-a", "worker", file("/usr/local/bin/x", "data:,x", `"mode":2541`))}, "$.spec.config.storage.files.0.mode", "bits above 0777"},
		{"relative path", []string{doc("10-a", "worker", file("etc/x", "data:,x"))}, "$.spec.config.storage.files.0.path", "absolute"},
		{"unknown version", []string{doc("10-a", "worker", `{"ignition":{"version":"3.9.0"}}`)}, "$.spec.config.ignition.version", "3.9.0"},
		{"unknown key", []string{doc("10-a", "worker", `{"ignition":{"version":"3.2.0"},"kernelArguments":{"shouldExist":["a"]}}`)}, "$.spec.config.kernelArguments", "unknown key"},
		{"config not an object", []string{doc("10-a", "worker", `"ignition"`)}, "$.spec.config", "object"},
		{"conflict only in the merge", []string{
			doc("10-a", "worker", `{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/d","target":"/tmp"}]}}`),
			doc("20-b", "worker", file("/etc/d/x", "data:,x"))}, "$.spec.config.storage.files.0", "in the merged config of pool worker"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := renderErrs(t, setOf(t, tc.docs...), "worker", Options{})
			e := errs[0]
			if e.Path.String() != tc.path || !strings.Contains(e.Message, tc.msg) || !errors.Is(e, ErrInvalid) || !strings.HasPrefix(e.Object, "MachineConfig/") || e.File == "" {
				t.Fatalf("first error %q (path %s), want %q at %s", e, e.Path, tc.msg, tc.path)
			}
		})
	}
}

func TestEmptyConfigs(t *testing.T) {
	s := setOf(t, doc("10-a", "worker", "", "kernelArguments: [a]"), doc("20-b", "worker", "null"))
	r := mustRender(t, s, "worker", Options{})
	if string(r.MachineConfig.Spec.Config) != `{"ignition":{"version":"3.0.0"}}` {
		t.Errorf("config %s", r.MachineConfig.Spec.Config)
	}
}

func TestSizeLimit(t *testing.T) {
	// The error is blamed on the MachineConfig whose contents are large,
	// at its line, not on the pool, and states the limit. Each is under
	// the limit (one over it is refused as it is loaded:
	// TestLargeMachineConfigRefusedFirst), their merge is not.
	big := strings.Repeat("a", maxRenderedSize-2000)
	errs := renderErrs(t, setOf(t, doc("05-small", "worker", file("/etc/small", "data:,"+strings.Repeat("b", 4000))), doc("10-a", "worker", file("/etc/big", "data:,"+big))), "worker", Options{})
	if len(errs) != 1 || errs[0].Object != "MachineConfig/10-a" || errs[0].Path.String() != "$.spec.config" || errs[0].Line == 0 ||
		!strings.Contains(errs[0].Message, "above the limit of 1572864 (1.5 MiB") || !strings.Contains(errs[0].Message, "Largest Ignition configs, in bytes of JSON: 10-a ") {
		t.Fatalf("errors %v", errs)
	}
	// The size is measured without encoding the config again; it must be
	// exactly what encoding gives.
	r := mustRender(t, setOf(t, doc("10-a", "worker", file("/etc/a", "data:,a%20%3C%26%3E"), "kernelArguments: [a]")), "worker", Options{})
	b, _ := json.Marshal(r.MachineConfig)
	if n, err := encodedSize(r.MachineConfig); err != nil || n != len(b) {
		t.Errorf("encodedSize %d (%v), encoding gives %d", n, err, len(b))
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{File: "dir/a.yaml", Object: "MachineConfig/a", Path: convert.NewPath("spec", "kernelType"), Message: "bad"}
	if e.Error() != "dir/a.yaml: MachineConfig/a: $.spec.kernelType: bad" {
		t.Errorf("%q", e.Error())
	}
	if (&Error{Message: "bad"}).Error() != "bad" {
		t.Error("empty parts are left out")
	}
	es := &Errors{List: []*Error{e, {Message: "two", Err: ErrNoConfigs}}}
	if es.Error() != e.Error()+"\ntwo" || !errors.Is(es, ErrNoConfigs) {
		t.Errorf("%q", es.Error())
	}
}

// The output spec: the lowest that can express the config, within bounds.
func TestSpecChoice(t *testing.T) {
	luks := doc("50-luks", "worker", `{"ignition":{"version":"3.2.0"},"storage":{"luks":[{"name":"d","device":"/dev/sdb","clevis":{"tpm2":true}}]}}`)
	plain := doc("10-a", "worker", file("/etc/a", "data:,a"))
	tests := []struct {
		name    string
		docs    []string
		opts    Options
		spec    string // "" when the ceiling is exceeded
		ceiling string
	}{
		{"lowest", []string{plain}, Options{}, "3.0.0", ""},
		{"floor raises", []string{plain}, Options{MinSpec: convert.V3_4}, "3.4.0", ""},
		{"needs more than the floor", []string{plain, luks}, Options{}, "3.2.0", ""},
		{"within the ceiling", []string{plain, luks}, Options{MaxSpec: convert.V3_2}, "3.2.0", ""},
		{"above the ceiling", []string{plain, luks}, Options{MaxSpec: convert.V3_1}, "", "3.1.0"},
		{"forced", []string{plain}, Options{Spec: convert.V3_5}, "3.5.0", ""},
		{"forced below the content", []string{plain, luks}, Options{Spec: convert.V3_1}, "", "3.1.0"},
		{"forced spec 2", []string{plain}, Options{Spec: convert.V2_2}, "2.2.0", ""},
		{"spec 2 ceiling with spec-2 content", []string{plain}, Options{MinSpec: convert.V2_2, MaxSpec: convert.V2_2}, "2.2.0", ""},
		{"spec 2 cannot hold LUKS", []string{plain, luks}, Options{Spec: convert.V2_2}, "", "2.2.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := setOf(t, tc.docs...)
			r, err := s.RenderPool("worker", tc.opts)
			if tc.spec != "" {
				if err != nil {
					t.Fatal(err)
				}
				if r.Spec.String() != tc.spec {
					t.Fatalf("spec %s, want %s", r.Spec, tc.spec)
				}
				p, err := convert.Parse(r.MachineConfig.Spec.Config)
				if err != nil || p.Version.String() != tc.spec {
					t.Fatalf("the config does not parse as %s: %v", tc.spec, err)
				}
				return
			}
			var ce *specCeilingError
			if !errors.As(err, &ce) || !errors.Is(err, ErrSpecCeiling) {
				t.Fatalf("error %v, want a *specCeilingError", err)
			}
			if ce.Ceiling.String() != tc.ceiling || ce.Pool != "worker" || len(ce.Reasons) == 0 {
				t.Fatalf("ceiling error %+v", ce)
			}
			r0 := ce.Reasons[0]
			if r0.MachineConfig != "50-luks" || r0.ConfigPath.String() != "$.spec.config.storage.luks.0" || r0.Version != convert.V3_2 || r0.Source == "" {
				t.Errorf("reason %+v", r0)
			}
			var es *Errors
			errors.As(err, &es)
			if line := es.List[0].Error(); !strings.HasPrefix(line, "in/01.yaml:8:62: MachineConfig/50-luks: $.spec.config.storage.luks.0: LUKS volumes need spec 3.2.0, above the ceiling") {
				t.Errorf("line %q", line)
			}
		})
	}
}

func TestOptionsChecked(t *testing.T) {
	s := setOf(t, doc("10-a", "worker", ""))
	for _, o := range []Options{
		{MinSpec: convert.V3_4, MaxSpec: convert.V3_2},
		{Spec: convert.Version{Major: 3, Minor: 9}},
		{MaxSpec: convert.Version{Major: 2, Minor: 4}},
	} {
		if _, err := s.RenderPool("worker", o); !errors.Is(err, errOptions) {
			t.Errorf("%+v: error %v, want errOptions", o, err)
		}
	}
}

// sourcesValidated swaps large data URLs one for one (the same for the
// same), leaves short ones and other schemes, and never changes its input.
func TestSourcesValidated(t *testing.T) {
	big := func(c string) *string { s := "data:," + strings.Repeat(c, minSwappedSource); return &s }
	short, remote := "data:,x", "https://example.com/"+strings.Repeat("y", minSwappedSource)
	var cfg convert.Config
	cfg.Ignition.Version = convert.Newest.String()
	for i, src := range []*string{big("a"), big("b"), big("a"), &short, &remote} {
		f := types.File{Node: types.Node{Path: fmt.Sprintf("/etc/%d", i)}}
		f.Contents.Source = src
		f.Append = []types.Resource{{Source: big("b")}}
		cfg.Storage.Files = append(cfg.Storage.Files, f)
	}
	var v validItems
	got := v.sourcesValidated(cfg)
	if again := v.sourcesValidated(cfg); *again.Storage.Files[1].Contents.Source != *got.Storage.Files[1].Contents.Source {
		t.Error("the same URL got another token in a second config of the set")
	}
	src := func(i int) string { return *got.Storage.Files[i].Contents.Source }
	if src(0) == *big("a") || src(0) != src(2) || src(0) == src(1) || src(1) != *got.Storage.Files[0].Append[0].Source {
		t.Errorf("swapped %q %q %q, append %q: want one token per distinct URL", src(0), src(1), src(2), *got.Storage.Files[0].Append[0].Source)
	}
	if src(3) != short || src(4) != remote {
		t.Errorf("swapped %q, %q: short and non-data URLs stay", src(3), src(4))
	}
	if *cfg.Storage.Files[0].Contents.Source != *big("a") || *cfg.Storage.Files[1].Append[0].Source != *big("b") {
		t.Error("the input changed")
	}
	if r := validate.ValidateWithContext(got, nil); r.IsFatal() {
		t.Errorf("tokens do not validate: %v", r)
	}
}
