package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/mctest"
)

// Upstream merges role-worker configs first, then the rest, each by name.
func TestMergeOrder(t *testing.T) {
	s := setOf(t,
		doc("99-infra-b", "infra", file("/etc/x", "data:,infra-b")),
		doc("00-infra-a", "infra", file("/etc/x", "data:,infra-a")),
		doc("50-worker", "worker", file("/etc/x", "data:,worker")),
		doc("10-worker", "worker", file("/etc/x", "data:,worker-10")),
		mctest.Pool("infra"),
		mctest.RolePool("worker"))
	tests := []struct {
		pool, order, winner string
	}{
		// A custom pool's configs win over the worker configs it selects,
		// even those sorting after them by name.
		{"infra", "10-worker 50-worker 00-infra-a 99-infra-b", "data:,infra-b"},
		{"worker", "10-worker 50-worker", "data:,worker"},
	}
	for _, tc := range tests {
		t.Run(tc.pool, func(t *testing.T) {
			r := mustRender(t, s, tc.pool, Options{})
			if got := strings.Join(r.MachineConfigs, " "); got != tc.order {
				t.Errorf("order %q, want %q", got, tc.order)
			}
			if got := source(t, &r.Config, "/etc/x"); got != tc.winner {
				t.Errorf("/etc/x from %q, want %q", got, tc.winner)
			}
			if got, want := r.Provenance.Files["/etc/x"], strings.Fields(tc.order)[len(strings.Fields(tc.order))-1]; got != want {
				t.Errorf("provenance of /etc/x: %s, want %s", got, want)
			}
		})
	}
}

// A later plain file must not inherit an earlier file's gzip compression.
func TestMergeCompressionReset(t *testing.T) {
	gzipped := func(path, src string) string {
		return `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"` + path + `","contents":{"compression":"gzip","source":"` + src + `"}}]}}`
	}
	tests := []struct {
		name   string
		later  string
		source string
		comp   string // "" for none
	}{
		{"plain replaces gzip", file("/etc/x", "data:,plain"), "data:,plain", ""},
		{"gzip replaces gzip", gzipped("/etc/x", "data:;base64,H4sIAAAAAAAC/yvJyCxWAAAsYL3MBQAAAA=="), "data:;base64,H4sIAAAAAAAC/yvJyCxWAAAsYL3MBQAAAA==", "gzip"},
		// Upstream would drop the compression here and leave the earlier,
		// compressed contents: the node would write gzip bytes. The
		// contents and their compression stay together instead.
		{"mode only keeps contents and compression", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/x","mode":384}]}}`, "data:;base64,H4sIAAAAAAAC/0vPz09JAgAJQ1fyBAAAAA==", "gzip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := setOf(t,
				doc("10-a", "worker", gzipped("/etc/x", "data:;base64,H4sIAAAAAAAC/0vPz09JAgAJQ1fyBAAAAA==")),
				doc("20-b", "worker", tc.later))
			r := mustRender(t, s, "worker", Options{})
			f := r.Config.Storage.Files[fileByPath(&r.Config, "/etc/x")]
			comp := ""
			if f.Contents.Compression != nil {
				comp = *f.Contents.Compression
				if comp == "" {
					t.Error("an empty compression was left in the output")
				}
			}
			if comp != tc.comp || source(t, &r.Config, "/etc/x") != tc.source {
				t.Errorf("compression %q source %q, want %q %q", comp, source(t, &r.Config, "/etc/x"), tc.comp, tc.source)
			}
		})
	}
}

func TestMergeOverwriteDefault(t *testing.T) {
	s := setOf(t, doc("10-a", "worker", `{"ignition":{"version":"3.2.0"},"storage":{"files":[`+
		`{"path":"/etc/a","contents":{"source":"data:,a"}},{"path":"/etc/b","overwrite":false,"contents":{"source":"data:,b"}}]}}`))
	r := mustRender(t, s, "worker", Options{})
	for path, want := range map[string]bool{"/etc/a": true, "/etc/b": false} {
		f := r.Config.Storage.Files[fileByPath(&r.Config, path)]
		if f.Overwrite == nil || *f.Overwrite != want {
			t.Errorf("%s overwrite %v, want %v", path, f.Overwrite, want)
		}
	}
}

// The MachineConfig fields outside Ignition follow upstream's rules.
func TestMergeSpecFields(t *testing.T) {
	cc := `apiVersion: machineconfiguration.openshift.io/v1
kind: ControllerConfig
metadata:
  name: machine-config-controller
  annotations: {machineconfiguration.openshift.io/release-image-version: "4.99.0"}
spec:
  baseOSContainerImage: registry.example.com/os@sha256:0000
  baseOSExtensionsContainerImage: registry.example.com/ext@sha256:0000
`
	tests := []struct {
		name  string
		docs  []string
		check func(t *testing.T, spec MachineConfigSpec, ann map[string]string)
	}{
		{"kernel arguments and extensions concatenate in order, duplicates kept",
			[]string{doc("10-a", "worker", "", "kernelArguments: [a=1, b]", "extensions: [usbguard]"),
				doc("20-b", "worker", "", "kernelArguments: [b, c]", "extensions: [usbguard, sysstat]")},
			func(t *testing.T, s MachineConfigSpec, _ map[string]string) {
				if got := strings.Join(s.KernelArguments, " "); got != "a=1 b b c" {
					t.Errorf("kernel arguments %q", got)
				}
				if got := strings.Join(s.Extensions, " "); got != "usbguard usbguard sysstat" {
					t.Errorf("extensions %q", got)
				}
			}},
		{"none set gives empty lists, not null", []string{doc("10-a", "worker", "")},
			func(t *testing.T, s MachineConfigSpec, _ map[string]string) {
				if s.KernelArguments == nil || s.Extensions == nil || s.KernelType != "default" || s.FIPS {
					t.Errorf("spec %+v", s)
				}
			}},
		{"fips if any asks", []string{doc("10-a", "worker", "", "fips: true"), doc("20-b", "worker", "", "fips: false")},
			func(t *testing.T, s MachineConfigSpec, _ map[string]string) {
				if !s.FIPS {
					t.Error("fips false")
				}
			}},
		{"last non-default kernel type wins", []string{doc("10-a", "worker", "", "kernelType: realtime"), doc("20-b", "worker", "", "kernelType: 64k-pages"), doc("30-c", "worker", "", "kernelType: default")},
			func(t *testing.T, s MachineConfigSpec, _ map[string]string) {
				if s.KernelType != "64k-pages" {
					t.Errorf("kernelType %q", s.KernelType)
				}
			}},
		{"release images by default", []string{cc, doc("10-a", "worker", "")},
			func(t *testing.T, s MachineConfigSpec, ann map[string]string) {
				if s.OSImageURL != "registry.example.com/os@sha256:0000" || s.BaseOSExtensionsContainerImage != "registry.example.com/ext@sha256:0000" {
					t.Errorf("images %q %q", s.OSImageURL, s.BaseOSExtensionsContainerImage)
				}
				if ann[AnnotationReleaseImageVersion] != "4.99.0" || ann[annotationOSImageURLOverridden] != "" {
					t.Errorf("annotations %v", ann)
				}
			}},
		{"a user's image overrides, the last one winning; a generated config's does not", []string{cc,
			doc("10-a", "worker", "", "osImageURL: registry.example.com/custom@sha256:1111"),
			doc("20-b", "worker", "", "osImageURL: registry.example.com/custom@sha256:2222", "baseOSExtensionsContainerImage: registry.example.com/ext@sha256:2222"),
			strings.Replace(doc("30-generated", "worker", "", "osImageURL: registry.example.com/stale@sha256:3333"), "metadata:\n", "metadata:\n  annotations: {machineconfiguration.openshift.io/generated-by-controller-version: abc}\n", 1)},
			func(t *testing.T, s MachineConfigSpec, ann map[string]string) {
				if s.OSImageURL != "registry.example.com/custom@sha256:2222" || s.BaseOSExtensionsContainerImage != "registry.example.com/ext@sha256:2222" {
					t.Errorf("images %q %q", s.OSImageURL, s.BaseOSExtensionsContainerImage)
				}
				if ann[annotationOSImageURLOverridden] != "true" || ann[AnnotationGeneratedByController] != "abc" {
					t.Errorf("annotations %v", ann)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, setOf(t, tc.docs...), "worker", Options{})
			tc.check(t, r.MachineConfig.Spec, r.MachineConfig.Metadata.Annotations)
		})
	}
}

// kernel-devel needs the default kernel; upstream refuses the render.
func TestKernelDevelWithRealtimeRefused(t *testing.T) {
	for _, kt := range []string{"realtime", "64k-pages"} {
		t.Run(kt, func(t *testing.T) {
			s := setOf(t,
				doc("10-devel", "worker", "", "extensions: [usbguard, kernel-devel]"),
				doc("20-rt", "worker", "", "kernelType: "+kt))
			errs := renderErrs(t, s, "worker", Options{})
			if len(errs) != 1 || errs[0].Object != "MachineConfig/10-devel" || errs[0].Path.String() != "$.spec.extensions.1" ||
				!strings.Contains(errs[0].Message, "kernelType "+kt) || !strings.Contains(errs[0].Message, "20-rt") {
				t.Fatalf("errors %v", errs)
			}
		})
	}
	// With the default kernel it renders.
	mustRender(t, setOf(t, doc("10-devel", "worker", "", "extensions: [kernel-devel]"), doc("20-default", "worker", "", "kernelType: default")), "worker", Options{})
}

// Provenance credits each entry to the config whose entry won the merge.
func TestProvenance(t *testing.T) {
	s := setOf(t,
		doc("10-a", "worker", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}},{"path":"/etc/l","contents":{"source":"data:,file"}}],"directories":[{"path":"/var/d"}]},"systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Unit]\n"}]},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA a"]}]}}`, "kernelArguments: [x, k2]"),
		doc("20-b", "worker", `{"ignition":{"version":"3.3.0"},"storage":{"links":[{"path":"/etc/l","target":"/etc/a"}]},"systemd":{"units":[{"name":"a.service","enabled":false}]},"kernelArguments":{"shouldExist":["z"]}}`, "kernelArguments: [k2]"))
	r := mustRender(t, s, "worker", Options{})
	want := Provenance{
		Files:           map[string]string{"/etc/a": "10-a"}, // the link replaced the file /etc/l
		Directories:     map[string]string{"/var/d": "10-a"},
		Links:           map[string]string{"/etc/l": "20-b"},
		Units:           map[string]string{"a.service": "20-b"},
		Users:           map[string]string{"core": "10-a"},
		KernelArguments: map[string]string{"k2": "10-a", "x": "10-a", "z": "20-b"},
	}
	got, _ := json.Marshal(r.Provenance)
	wantJS, _ := json.Marshal(want)
	if string(got) != string(wantJS) {
		t.Errorf("provenance\n got %s\nwant %s", got, wantJS)
	}
}

// Reasons name the MachineConfig and the path inside it, through the merge.
func TestReasonAttribution(t *testing.T) {
	s := setOf(t,
		doc("10-a", "worker", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}},{"path":"/etc/b","contents":{"source":"data:,b"}}]}}`),
		doc("20-b", "worker", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/c","contents":{"source":"data:,c"}},{"path":"/etc/b","contents":{"source":"data:,b2","verification":{"hash":"sha256-`+strings.Repeat("0", 64)+`"}}}]}}`),
		doc("30-c", "worker", `{"ignition":{"version":"3.3.0"},"kernelArguments":{"shouldExist":["k"]}}`))
	r := mustRender(t, s, "worker", Options{})
	got := map[string]string{}
	for _, rs := range r.Reasons {
		got[rs.Path.String()] = rs.MachineConfig + " " + rs.ConfigPath.String() + " " + rs.Source
	}
	want := map[string]string{
		"$.storage.files.1.contents.verification.hash": "20-b $.spec.config.storage.files.1.contents.verification.hash in/01.yaml",
		"$.kernelArguments.shouldExist":                "30-c $.spec.config.kernelArguments.shouldExist in/02.yaml",
	}
	if len(got) != len(want) {
		t.Fatalf("reasons %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if r.Spec.String() != "3.3.0" || r.MinSpec.String() != "3.3.0" {
		t.Errorf("spec %s min %s", r.Spec, r.MinSpec)
	}
}

// Rendering must not change what was loaded: the server renders one Set
// again and again, concurrently.
func TestRenderLeavesSetUnchanged(t *testing.T) {
	s := setOf(t,
		doc("10-a", "worker", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/x","contents":{"compression":"gzip","source":"data:;base64,H4sIAAAAAAAC/0vPz09JAgAJQ1fyBAAAAA=="}}]}}`),
		doc("20-b", "worker", file("/etc/x", "data:,plain")))
	before := snapshot(t, s)
	first := mustRender(t, s, "worker", Options{})
	done := make(chan []byte, 4)
	for range 4 {
		go func() {
			r, err := s.RenderPool("worker", Options{})
			if err != nil {
				done <- nil
				return
			}
			b, _ := json.Marshal(r.MachineConfig)
			done <- b
		}()
	}
	want, _ := json.Marshal(first.MachineConfig)
	for range 4 {
		if b := <-done; string(b) != string(want) {
			t.Fatalf("a concurrent render differs:\n%s\n%s", b, want)
		}
	}
	if after := snapshot(t, s); after != before {
		t.Fatal("rendering changed the loaded configs")
	}
}

func snapshot(t *testing.T, s *Set) string {
	var b strings.Builder
	for _, e := range s.entries {
		if e.cfg != nil {
			js, err := json.Marshal(e.cfg)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(js)
		}
	}
	return b.String()
}

var _ = errors.New
