package render

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

func loadErrs(t *testing.T, paths ...string) []*Error {
	t.Helper()
	_, err := Load(paths...)
	var es *Errors
	if !errors.As(err, &es) {
		t.Fatalf("Load error %v, want *Errors", err)
	}
	return es.List
}

func TestLoadDocumentForms(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{
		"multi.yaml": "# leading comment\n---\n" + doc("10-a", "worker", "") + "---\n# only a comment\n---\n" + doc("20-b", "worker", "") + "...\n",
		"list.yml": `apiVersion: v1
kind: List
items:
- apiVersion: machineconfiguration.openshift.io/v1
  kind: MachineConfig
  metadata: {name: 30-c, labels: {machineconfiguration.openshift.io/role: worker}}
  spec: {}
`,
		"array.json":      `[{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"40-d","labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{}}]`,
		"single.json":     `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"50-e","labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{}}`,
		"sub/deep.yaml":   doc("60-f", "worker", ""),
		".hidden.yaml":    doc("70-hidden", "worker", ""),
		".data/x.yaml":    doc("80-hidden-dir", "worker", ""),
		"README.md":       "not read",
		"other-kind.yaml": "apiVersion: machineconfiguration.openshift.io/v1\nkind: KubeletConfig\nmetadata: {name: k}\n",
		"nokind.yaml":     "foo: bar\n",
		"foreign.yaml":    "apiVersion: example.com/v1\nkind: MachineConfig\nmetadata: {name: z}\n",
	})
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mc := range s.MachineConfigs() {
		names = append(names, mc.Metadata.Name)
	}
	if got := strings.Join(names, " "); got != "10-a 20-b 30-c 40-d 50-e 60-f" {
		t.Errorf("MachineConfigs %q", got)
	}
	var notices []string
	for _, n := range s.Notices() {
		notices = append(notices, n.Error())
	}
	joined := strings.Join(notices, "\n")
	for _, want := range []string{"KubeletConfig/k: $: notice:", "nokind.yaml: $.kind: notice: object has no kind", "foreign.yaml:1:1: MachineConfig/z: $: notice: example.com/v1 MachineConfig"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notices lack %q:\n%s", want, joined)
		}
	}
	if got := strings.Join(s.PoolNames(), " "); got != "worker" {
		t.Errorf("pools %q: a default pool selecting nothing is left out", got)
	}
}

func TestLoadDuplicates(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{
		"a.yaml":  doc("99-worker-ssh", "worker", ""),
		"b.yaml":  doc("99-worker-ssh", "worker", ""),
		"p1.yaml": "kind: MachineConfigPool\nmetadata: {name: worker}\nspec: {machineConfigSelector: {matchLabels: {a: b}}}\n",
		"p2.yaml": "kind: MachineConfigPool\nmetadata: {name: worker}\nspec: {machineConfigSelector: {matchLabels: {a: b}}}\n",
		"c1.yaml": "kind: ControllerConfig\nmetadata: {name: machine-config-controller}\n",
		"c2.yaml": "kind: ControllerConfig\nmetadata: {name: machine-config-controller}\n",
	})
	errs := loadErrs(t, dir)
	if len(errs) != 3 {
		t.Fatalf("errors %v", errs)
	}
	for _, e := range errs {
		if !errors.Is(e, errDuplicateName) || !strings.Contains(e.Error(), dir) {
			t.Errorf("error %v", e)
		}
	}
	if e := errs[0]; !strings.HasSuffix(e.File, "b.yaml") || !strings.Contains(e.Message, filepath.Join(dir, "a.yaml")) {
		t.Errorf("duplicate MachineConfig error names %s and %q, want both files", e.File, e.Message)
	}
}

func TestLoadErrorsAreLocated(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{
		"bad-yaml.yaml": doc("10-a", "worker", "") + "---\nkind: MachineConfig\nmetadata:\n  name: [unclosed\n",
		"bad-type.yaml": doc("20-b", "worker", "", "kernelArguments: nosmt"),
		"bad-pool.yaml": "kind: MachineConfigPool\nmetadata: {name: p}\nspec:\n  machineConfigSelector:\n    matchExpressions:\n    - {key: a, operator: Sometimes}\n",
		"bad-cc.yaml":   "kind: ControllerConfig\nmetadata: {name: c}\nspec: {kubeAPIServerServingCAData: '!!notbase64'}\n",
		"noname.yaml":   "kind: MachineConfig\nspec: {}\n",
	})
	got := map[string]string{}
	for _, e := range loadErrs(t, dir) {
		got[filepath.Base(e.File)] = e.Path.String() + " " + e.Message
	}
	want := map[string]string{
		"bad-yaml.yaml": "line 11", // in the second document, which starts on line 8
		"bad-type.yaml": "$.spec.kernelArguments want a list of strings",
		"bad-pool.yaml": "$.spec.machineConfigSelector.matchExpressions.0.operator unknown operator",
		"bad-cc.yaml":   "$.spec CA data is not valid base64",
		"noname.yaml":   "$.metadata.name MachineConfig has no name",
	}
	for f, w := range want {
		if !strings.Contains(got[f], w) {
			t.Errorf("%s: %q, want it to contain %q", f, got[f], w)
		}
	}
}

func TestLoadControllerConfig(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{"cc.yaml": `apiVersion: machineconfiguration.openshift.io/v1
kind: ControllerConfig
metadata:
  name: machine-config-controller
  annotations:
    machineconfiguration.openshift.io/generated-by-version: v4.99
    machineconfiguration.openshift.io/release-image-version: 4.99.1
spec:
  baseOSContainerImage: registry.example.com/os@sha256:1
  baseOSExtensionsContainerImage: registry.example.com/ext@sha256:1
  kubeAPIServerServingCAData: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
  cloudProviderCAData: null
  rootCAData: cm9vdA==
  images: {ignored: true}
`, "mc.yaml": doc("10-a", "worker", "")})
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cc := s.ControllerConfig()
	if cc == nil || cc.Name != "machine-config-controller" || cc.BaseOSContainerImage != "registry.example.com/os@sha256:1" ||
		cc.BaseOSExtensionsContainerImage != "registry.example.com/ext@sha256:1" || string(cc.KubeAPIServerServingCAData) != "-----BEGIN CERTIFICATE-----\n" ||
		cc.CloudProviderCAData != nil || string(cc.RootCAData) != "root" || cc.ReleaseImageVersion != "4.99.1" || cc.ControllerVersion != "v4.99" ||
		cc.Source != filepath.Join(dir, "cc.yaml") {
		t.Errorf("ControllerConfig %+v", cc)
	}
	if s2 := setOf(t, doc("10-a", "worker", "")); s2.ControllerConfig() != nil {
		t.Error("a tree without a ControllerConfig has one")
	}
}

func TestLoadButane(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{
		"99-worker-x.bu": `variant: openshift
version: 4.14.0
metadata:
  name: 99-worker-x
  labels:
    machineconfiguration.openshift.io/role: worker
storage:
  files:
    - path: /etc/x
      contents:
        local: x.txt
openshift:
  kernel_arguments: [loglevel=7]
`,
		"x.txt":   "from a local file\n",
		"fcos.bu": "variant: fcos\nversion: 1.5.0\n",
	})
	errs := loadErrs(t, dir)
	if len(errs) != 1 || !strings.HasSuffix(errs[0].File, "fcos.bu") || errs[0].Path.String() != "$.variant" {
		t.Fatalf("errors %v, want one for the fcos variant", errs)
	}
	os.Remove(filepath.Join(dir, "fcos.bu"))
	// A key Butane would drop (a typo here) fails the load at its line.
	os.WriteFile(filepath.Join(dir, "typo.bu"), []byte("variant: openshift\nversion: 4.14.0\nmetadata:\n  name: 99-worker-typo\n  labels: {machineconfiguration.openshift.io/role: worker}\nsystemd:\n  unitz: []\n"), 0o644)
	errs = loadErrs(t, dir)
	if len(errs) != 1 || errs[0].Line != 7 || errs[0].Path.String() != "$.systemd.unitz" || !errors.Is(errs[0], ErrInvalid) ||
		!strings.Contains(errs[0].Error(), "typo.bu:7:3: MachineConfig/99-worker-typo: $.systemd.unitz: butane openshift 4.14.0: unused key unitz: Butane would drop it (a typo, or a newer release's field); did you mean units?") {
		t.Fatalf("errors %v, want one at typo.bu line 7", errs)
	}
	os.Remove(filepath.Join(dir, "typo.bu"))
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := mustRender(t, s, "worker", Options{})
	if got := source(t, &r.Config, "/etc/x"); !strings.Contains(got, "from%20a%20local%20file") {
		t.Errorf("/etc/x from %q", got)
	}
	if strings.Join(r.MachineConfig.Spec.KernelArguments, " ") != "loglevel=7" || r.Provenance.Files["/etc/x"] != "99-worker-x" {
		t.Errorf("render %+v", r.MachineConfig.Spec)
	}
}

func TestLoadPoolsAndSelection(t *testing.T) {
	t.Run("explicit pool selecting nothing fails to render", func(t *testing.T) {
		s := setOf(t, doc("10-a", "worker", ""), "kind: MachineConfigPool\nmetadata: {name: gpu}\nspec: {machineConfigSelector: {matchLabels: {machineconfiguration.openshift.io/role: gpu}}}\n")
		errs := renderErrs(t, s, "gpu", Options{})
		if !errors.Is(errs[0], ErrNoConfigs) || errs[0].Path.String() != "$.spec.machineConfigSelector" {
			t.Fatalf("errors %v", errs)
		}
		var notices []string
		for _, n := range s.Notices() {
			notices = append(notices, n.Error())
		}
		if !strings.Contains(strings.Join(notices, "\n"), "MachineConfig/10-a: $.metadata.labels: notice: no pool selects this MachineConfig") {
			t.Errorf("notices %v", notices)
		}
	})
	t.Run("empty selector selects nothing", func(t *testing.T) {
		s := setOf(t, doc("10-a", "worker", ""), "kind: MachineConfigPool\nmetadata: {name: all}\nspec: {machineConfigSelector: {}}\n")
		errs := renderErrs(t, s, "all", Options{})
		if !strings.Contains(errs[0].Message, "empty") {
			t.Fatalf("errors %v", errs)
		}
	})
	t.Run("unknown pool", func(t *testing.T) {
		s := setOf(t, doc("10-a", "worker", ""))
		errs := renderErrs(t, s, "nope", Options{})
		if !errors.Is(errs[0], ErrUnknownPool) || !strings.Contains(errs[0].Message, "worker") {
			t.Fatalf("errors %v", errs)
		}
	})
	t.Run("a config in two pools", func(t *testing.T) {
		s := setOf(t, doc("10-a", "worker", file("/etc/a", "data:,a")), doc("20-b", "infra", ""),
			"kind: MachineConfigPool\nmetadata: {name: infra}\nspec: {machineConfigSelector: {matchExpressions: [{key: machineconfiguration.openshift.io/role, operator: In, values: [worker, infra]}]}}\n",
			"kind: MachineConfigPool\nmetadata: {name: worker}\nspec: {machineConfigSelector: {matchLabels: {machineconfiguration.openshift.io/role: worker}}}\n")
		results, errs := s.Render(Options{})
		if errs != nil || len(results) != 2 || results[0].Pool != "infra" || results[1].Pool != "worker" {
			t.Fatalf("results %v errs %v", results, errs)
		}
		for _, r := range results {
			if r.Provenance.Files["/etc/a"] != "10-a" {
				t.Errorf("pool %s lacks /etc/a", r.Pool)
			}
		}
	})
}

func TestSplitDocuments(t *testing.T) {
	docs, starts := splitDocuments([]byte("a: 1\n---\nb: 2\n--- # note\nc: 3\n...\n---\nd: 4"))
	// The text after "---" belongs to the next document; "..." then "---"
	// leave an empty one between them.
	if want := []string{"a: 1\n", "\nb: 2\n", " # note\nc: 3\n", "", "\nd: 4"}; strings.Join(bytesToStrings(docs), "|") != strings.Join(want, "|") {
		t.Fatalf("docs %q", docs)
	}
	wantStarts := []int{1, 2, 4, 7, 7}
	for i, w := range wantStarts {
		if starts[i] != w {
			t.Errorf("document %d starts on line %d, want %d (%q)", i, starts[i], w, docs[i])
		}
	}
}

// FuzzDecodeDocuments: any bytes are read without panicking, and every
// object found is valid JSON.
func FuzzDecodeDocuments(f *testing.F) {
	for _, s := range []string{
		doc("10-a", "worker", file("/etc/a", "data:,a")),
		"---\n---\n...\n",
		"apiVersion: v1\nkind: List\nitems: [{kind: MachineConfig, metadata: {name: x}}]\n",
		`[{"kind":"MachineConfig"},{"kind":"MachineConfigPool"}]`,
		"kind: [\n",
		"--- !!binary\n",
		"a: &x 1\nb: *x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, _ := decodeDocuments("fuzz.yaml", data, true)
		for _, o := range objs {
			if !jsonValid(o.JSON) {
				t.Fatalf("object is not JSON: %q", o.JSON)
			}
		}
		var l Loader
		l.Data("fuzz.yaml", data)
		_, _ = l.Set()
	})
}

func bytesToStrings(b [][]byte) []string {
	out := make([]string, len(b))
	for i, x := range b {
		out[i] = string(x)
	}
	return out
}
