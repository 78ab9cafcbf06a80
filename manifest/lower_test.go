package manifest

import (
	"os"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/shareddata"
)

// TestLowerLayouts: each layout keeps every byte but those the lowering
// changes.
func TestLowerLayouts(t *testing.T) {
	const mc = "kind: MachineConfig\nmetadata:\n  name: a\nspec:\n  config:\n    ignition:\n"
	for _, c := range []struct {
		name, in, want string
		line           int    // of the first object
		rewrote        string // of the first object
		err            string // an error containing it
	}{
		{name: "plain", in: mc + "      version: 3.5.0\n", want: mc + "      version: 3.0.0\n", line: 7, rewrote: RewroteVersion},
		{name: "crlf", in: strings.ReplaceAll(mc+"      version: 3.5.0\n", "\n", "\r\n"), want: strings.ReplaceAll(mc+"      version: 3.0.0\n", "\n", "\r\n"), line: 7, rewrote: RewroteVersion},
		{name: "tab-comment", in: mc + "      version: 3.5.0\t# c\n", want: mc + "      version: 3.0.0\t# c\n", line: 7, rewrote: RewroteVersion},
		{name: "no-newline", in: mc + "      version: '3.5.0'", want: mc + "      version: '3.0.0'", line: 7, rewrote: RewroteVersion},
		{name: "quoted-key", in: mc + "      \"version\": \"3.5.0\"\n", want: mc + "      \"version\": \"3.0.0\"\n", line: 7, rewrote: RewroteVersion},
		{name: "inline-document", in: "# x\n--- {kind: MachineConfig, spec: {config: {ignition: {version: \"3.2.0\"}}}}\n", want: "# x\n--- {kind: MachineConfig, spec: {config: {ignition: {version: \"3.0.0\"}}}}\n", line: 2, rewrote: RewroteVersion},
		{name: "second-document", in: "kind: ConfigMap\n---\n" + mc + "      version: 3.4.0\n", want: "kind: ConfigMap\n---\n" + mc + "      version: 3.0.0\n", line: 9, rewrote: RewroteVersion},
		{name: "json-array", in: `[{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.5.0"}}}},` + "\n" + `{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.1.0"}}}}]`,
			want: `[{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.0.0"}}}},` + "\n" + `{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.0.0"}}}}]`, line: 1, rewrote: RewroteVersion},
		{name: "json-delete", in: `{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.4.0"},"kernelArguments":{}}}}`,
			want: `{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.0.0"}}}}`, line: 1, rewrote: RewroteConfig},
		{name: "lowest", in: mc + "      version: 3.0.0\n", want: mc + "      version: 3.0.0\n", line: 7},
		{name: "empty-config", in: "kind: MachineConfig\nspec:\n  config: {}\n", want: "kind: MachineConfig\nspec:\n  config: {}\n"},
		{name: "spec2", in: mc + "      version: 2.2.0\n", want: mc + "      version: 2.2.0\n", line: 7},
		{name: "anchor", in: mc + "      version: &v 3.5.0\n", err: "anchors"},
		{name: "typo", in: mc + "      version: 3.2.0\n    storage:\n      filez: []\n", err: "a:9:7: MachineConfig/a (document 1): $.spec.config.storage.filez: unknown key"},
		{name: "yaml-syntax", in: mc + "      version: [3.5.0\n", err: "invalid YAML"},
		{name: "no-version", in: mc + "      timeouts: {}\n", err: "no ignition.version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := "a"
			if strings.HasPrefix(c.in, "[") || strings.HasPrefix(c.in, "{") {
				name = "a.json"
			}
			res, err := Lower(name, []byte(c.in), convert.Version{})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
				if string(res.Data) != c.in {
					t.Error("rewrote, yet failed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Data) != c.want {
				t.Errorf("got\n%q\nwant\n%q", res.Data, c.want)
			}
			if c.line == 0 {
				if res.Changed() {
					t.Errorf("objects %+v", res.Objects)
				}
				return
			}
			if o := res.Objects[0]; o.Line != c.line || o.Rewrote != c.rewrote {
				t.Errorf("line %d rewrote %q, want %d %q", o.Line, o.Rewrote, c.line, c.rewrote)
			}
			if res.Changed() != (c.rewrote != "") {
				t.Errorf("Changed() = %v", res.Changed())
			}
		})
	}
}

// BenchmarkLower lowers a real cluster's 00-master (OpenShift's own, 743
// lines), read back and checked as render lower does.
func BenchmarkLower(b *testing.B) {
	data, err := os.ReadFile(shareddata.Path(b, "realdata", "aws", "00-master.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := Lower("00-master.yaml", data, convert.Version{})
		if err != nil || !res.Changed() {
			b.Fatalf("%v %v", err, res.Objects)
		}
	}
}
