package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ignition-mcs/mcs/impact"
)

// diffDir holds the fixture pairs: base/ is every case's old tree.
var diffDir = filepath.Join("cmd", "render", "testdata", "diff")

type diffCase struct {
	name, old, new string
}

func diffCases() []diffCase {
	base := filepath.Join(diffDir, "base")
	var out []diffCase
	for _, n := range []string{"luks-discard", "file-change", "custom-pool", "karg-removed", "override", "ssh-key"} {
		out = append(out, diffCase{n, base, filepath.Join(diffDir, n)})
	}
	// The reverse of luks-discard: the spec is lowered, eras admitted again.
	out = append(out, diffCase{"luks-removed", filepath.Join(diffDir, "luks-discard"), base})
	return append(out, diffCase{"no-change", base, base})
}

// TestDiffGolden runs render diff on every fixture pair in every output,
// checks the JSON against its schema and the GitHub commands' shape.
func TestDiffGolden(t *testing.T) {
	toRoot(t)
	schema := compileSchema(t)
	for _, c := range diffCases() {
		t.Run(c.name, func(t *testing.T) {
			golden := filepath.Join("cmd", "render", "testdata", "golden", "diff", c.name)
			for _, f := range []struct{ output, ext string }{{"text", ".txt"}, {"json", ".json"}, {"github", ".github"}} {
				out, errs, code := cli(t, "", "diff", "--output", f.output, c.old, c.new)
				if code != exitOK {
					t.Fatalf("--output %s: exit %d: %s", f.output, code, errs)
				}
				check(t, golden+f.ext, out)
				switch f.output {
				case "json":
					validate(t, schema, out)
				case "github":
					checkGitHub(t, out)
				}
			}
		})
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	s, err := c.Compile(filepath.Join("docs", "render-diff.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, doc string) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("output does not match docs/render-diff.schema.json: %v", err)
	}
}

var workflowCommand = regexp.MustCompile(`^::(error|warning|notice)( ([a-z]+=[^,:]*)(,[a-z]+=[^,:]*)*)?::\S`)

// checkGitHub checks every line is a workflow command, and that every
// command about a MachineConfig names its file and line, but for what was
// removed (its file may be gone: the pull request cannot show it).
func checkGitHub(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !workflowCommand.MatchString(l) {
			t.Errorf("not a workflow command: %q", l)
		}
		if strings.Contains(l, "(MachineConfig ") && !strings.Contains(l, " removed (") && (!strings.Contains(l, " file=") || !strings.Contains(l, ",line=")) {
			t.Errorf("no file and line: %q", l)
		}
	}
}

func diffJSON(t *testing.T, c diffCase, extra ...string) *impact.Report {
	t.Helper()
	out, errs, code := cli(t, "", append(append([]string{"diff", "--output", "json"}, extra...), c.old, c.new)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r impact.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func caseNamed(name string) diffCase {
	for _, c := range diffCases() {
		if c.name == name {
			return c
		}
	}
	panic(name)
}

// TestDiffLUKSDiscard: a pool gaining LUKS with discard goes from spec
// 3.0.0 to 3.4.0; spec 2 and 3.0–3.3 nodes are newly refused; the field and
// its MachineConfig are named, with the line.
func TestDiffLUKSDiscard(t *testing.T) {
	toRoot(t)
	r := diffJSON(t, caseNamed("luks-discard"))
	p := r.Pools[0]
	if p.Name != "worker" || p.Status != impact.Changed || p.Spec.Old != "3.0.0" || p.Spec.New != "3.4.0" || !p.Spec.Raised {
		t.Fatalf("pool %+v", p)
	}
	if !r.Holds.SpecRaise || !r.Holds.EraLoss || !r.Holds.AnyChange || r.Holds.Ceiling {
		t.Errorf("holds %+v", r.Holds)
	}
	var discard *impact.Reason
	for _, rs := range p.Spec.Reasons {
		if rs.Field == "$.storage.luks.0.discard" {
			discard = rs
		}
	}
	want := filepath.Join(diffDir, "luks-discard", "50-worker-luks.yaml")
	if discard == nil || !discard.Added || discard.MachineConfig != "50-worker-luks" || discard.At.File != want || discard.At.Line != lineOf(t, want, "discard: true") {
		t.Fatalf("discard reason %+v", discard)
	}
	refused := map[string]bool{"2.2.0": true, "3.0.0": true, "3.1.0": true, "3.2.0": true, "3.3.0": true}
	for _, e := range p.Eras {
		want := impact.EraStillAdmitted
		if refused[e.Spec] {
			want = impact.EraNewlyRefused
		}
		if e.Change != want {
			t.Errorf("era %s: %s, want %s", e.Spec, e.Change, want)
		}
	}
	out, _, _ := cli(t, "", "diff", "--output", "github", "--fail-on", "era-loss", caseNamed("luks-discard").old, caseNamed("luks-discard").new)
	if !strings.Contains(out, "::error file="+want+",line="+strconv.Itoa(lineOf(t, want, "discard: true"))+",col=9,title=pool worker::nodes whose Ignition reads at most spec 2.2.0, 3.0.0, 3.1.0, 3.2.0, 3.3.0") {
		t.Errorf("no era-loss error on the discard line:\n%s", out)
	}
}

// TestDiffNeverPrintsContents: a changed file shows size and digest, in
// every output, never the contents.
func TestDiffNeverPrintsContents(t *testing.T) {
	toRoot(t)
	c := caseNamed("file-change")
	for _, output := range []string{"text", "json", "github"} {
		out, _, _ := cli(t, "", "diff", "--output", output, c.old, c.new)
		for _, secret := range []string{"old-secret-7f3a", "new-secret-9c2e"} {
			if strings.Contains(out, secret) || strings.Contains(out, url.PathEscape(secret)) {
				t.Errorf("--output %s prints the contents %q", output, secret)
			}
		}
	}
	r := diffJSON(t, c)
	ch := r.Pools[0].Changes
	if len(ch) != 1 || ch[0].Category != "files" || ch[0].Name != "/etc/example/credentials" || ch[0].Op != impact.Changed {
		t.Fatalf("changes %+v", ch)
	}
	sum := sha256.Sum256([]byte("password=new-secret-9c2e\n"))
	var contents *impact.Field
	for _, f := range ch[0].Fields {
		if f.Field == "contents.source" {
			contents = f
		}
	}
	if contents == nil || contents.New.SHA256 != hex.EncodeToString(sum[:]) || *contents.New.Size != 25 || contents.Old.SHA256 == contents.New.SHA256 || contents.New.Text != "" {
		t.Fatalf("contents %+v", contents)
	}
}

func TestDiffPoolsAndArguments(t *testing.T) {
	toRoot(t)
	r := diffJSON(t, caseNamed("custom-pool"))
	if len(r.Pools) != 2 || r.Pools[0].Name != "infra" || r.Pools[0].Status != impact.Added || r.Pools[1].Status != impact.Unchanged {
		t.Fatalf("pools %+v", r.Pools)
	}
	if at, want := r.Pools[0].At, filepath.Join(diffDir, "custom-pool", "infra.machineconfigpool.yaml"); at.File != want || at.Line != lineOf(t, want, "apiVersion:") || at.Tree != "new" {
		t.Errorf("the new pool is at %+v", at)
	}
	r = diffJSON(t, caseNamed("karg-removed"))
	ch := r.Pools[0].Changes
	if len(ch) != 1 || ch[0].Category != "kernelArguments" || ch[0].Name != "nosmt" || ch[0].Op != impact.Removed || ch[0].MachineConfig != "05-worker-kargs" {
		t.Fatalf("changes %+v", ch)
	}
	out, _, code := cli(t, "", "diff", caseNamed("no-change").old, caseNamed("no-change").new)
	if code != exitOK || !strings.Contains(out, "no changes") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestDiffFailOn: each condition exits 4 exactly when it holds.
func TestDiffFailOn(t *testing.T) {
	toRoot(t)
	holds := map[string][]string{
		"luks-discard": {"spec-raise", "era-loss", "any-change"},
		"file-change":  {"any-change"},
		"custom-pool":  {"any-change"},
		"karg-removed": {"any-change"},
		"luks-removed": {"any-change"},
		"override":     {"any-change"},
		"ssh-key":      {"any-change"},
		"no-change":    nil,
	}
	for _, c := range diffCases() {
		for _, cond := range impact.Conditions {
			t.Run(c.name+"/"+cond, func(t *testing.T) {
				_, errs, code := cli(t, "", "diff", "--fail-on", cond, c.old, c.new)
				want := exitOK
				if slices.Contains(holds[c.name], cond) {
					want = exitFailOn
				}
				if code != want {
					t.Fatalf("exit %d, want %d: %s", code, want, errs)
				}
			})
		}
	}
	t.Run("ceiling", func(t *testing.T) {
		c := caseNamed("luks-discard")
		out, _, code := cli(t, "", "diff", "--max-spec", "3.3.0", "--fail-on", "ceiling", "--output", "github", c.old, c.new)
		if code != exitFailOn || !strings.Contains(out, "::error file=") || !strings.Contains(out, "above the ceiling 3.3.0") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
}

func TestDiffUsage(t *testing.T) {
	toRoot(t)
	base := caseNamed("no-change").old
	for _, c := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"one tree", []string{base}, "want two trees"},
		{"bad output", []string{"--output", "xml", base, base}, `--output: invalid value "xml": want one of text, json, github`},
		{"bad condition", []string{"--fail-on", "spec-raise,bogus", base, base}, `unknown condition "bogus"`},
		{"two stdins", []string{"-", "-"}, "only one tree"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs, code := cli(t, "", append([]string{"diff"}, c.args...)...)
			if code != exitUsage || !strings.Contains(errs, c.stderr) {
				t.Fatalf("exit %d: %s", code, errs)
			}
		})
	}
	out, _, code := cli(t, "", "diff", "--help")
	if code != exitOK || !strings.Contains(out, "4 a --fail-on condition holds") {
		t.Fatalf("help: exit %d:\n%s", code, out)
	}
}

// lineOf is the 1-based line of the first line of file containing s.
func lineOf(t *testing.T, file, s string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%s has no %q", file, s)
	return 0
}

// TestSchemaRejects proves the schema check can fail: contents as text,
// an unknown field, a wrong schema version.
func TestSchemaRejects(t *testing.T) {
	toRoot(t)
	schema := compileSchema(t)
	out, _, _ := cli(t, "", "diff", "--output", "json", caseNamed("file-change").old, caseNamed("file-change").new)
	for name, edit := range map[string][2]string{
		"contents as text": {`"size": 25,`, `"text": "password=x", "size": 25,`},
		"unknown field":    {`"changed": true,`, `"changed": true, "extra": 1,`},
		"schema version":   {`"schemaVersion": 1,`, `"schemaVersion": 2,`},
	} {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(out, edit[0], edit[1], 1)
			if doc == out {
				t.Fatalf("%q not in the output", edit[0])
			}
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			if schema.Validate(v) == nil {
				t.Fatal("the schema accepts it")
			}
		})
	}
}

// TestExitCodesDocumented: every exit status is in render --help, render
// diff --help and the README's table.
func TestExitCodesDocumented(t *testing.T) {
	toRoot(t)
	help, _, _ := cli(t, "", "--help")
	diffHelp, _, _ := cli(t, "", "diff", "--help")
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{exitOK, exitInvalid, exitUsage, exitCeiling, exitFailOn} {
		n := strconv.Itoa(code)
		if !strings.Contains(help, "\n  "+n+"  ") {
			t.Errorf("render --help does not document exit status %d", code)
		}
		if !strings.Contains(string(readme), "\n| "+n+" | ") {
			t.Errorf("README.md does not document exit status %d", code)
		}
	}
	if !strings.Contains(diffHelp, "0 compared") || !strings.Contains(diffHelp, "4 a --fail-on condition holds") {
		t.Errorf("render diff --help does not document its exit statuses:\n%s", diffHelp)
	}
}

// TestDiffNamesLocalFile: a file whose contents a Butane config embeds
// from beside it is shown with that local file, in text and JSON.
func TestDiffNamesLocalFile(t *testing.T) {
	toRoot(t)
	head := t.TempDir()
	copyTree(t, filepath.Join(diffDir, "base"), head)
	for name, body := range map[string]string{
		"hello.txt": "hello\n",
		"99-worker-hello.bu": "variant: openshift\nversion: 4.14.0\nmetadata:\n  name: 99-worker-hello\n  labels:\n    machineconfiguration.openshift.io/role: worker\n" +
			"storage:\n  files:\n    - path: /etc/motd.d/hello\n      contents:\n        local: hello.txt\n",
	} {
		if err := os.WriteFile(filepath.Join(head, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := diffCase{old: filepath.Join(diffDir, "base"), new: head}
	local := filepath.Join(head, "hello.txt")
	var ch *impact.Change
	for _, x := range diffJSON(t, c).Pools[0].Changes {
		if x.Name == "/etc/motd.d/hello" {
			ch = x
		}
	}
	if ch == nil || ch.Op != impact.Added || ch.MachineConfig != "99-worker-hello" || ch.Local != local {
		t.Fatalf("change %+v", ch)
	}
	out, _, _ := cli(t, "", "diff", c.old, c.new)
	if !strings.Contains(out, "+ file /etc/motd.d/hello (MachineConfig 99-worker-hello in "+filepath.Join(head, "99-worker-hello.bu")) ||
		!strings.Contains(out, "), contents from "+local+"\n") {
		t.Fatalf("text output:\n%s", out)
	}
}
