package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	v30 "github.com/coreos/ignition/v2/config/v3_0"
	v31 "github.com/coreos/ignition/v2/config/v3_1"
	v32 "github.com/coreos/ignition/v2/config/v3_2"
	v33 "github.com/coreos/ignition/v2/config/v3_3"
	v34 "github.com/coreos/ignition/v2/config/v3_4"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	v36 "github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/vcontext/report"
	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/internal/shareddata"
)

// ignitionParsers are Ignition's own readers, by the spec a config
// declares: each reads its spec and every older one, translated up.
var ignitionParsers = map[string]func([]byte) (any, report.Report, error){
	"3.0.0": func(b []byte) (any, report.Report, error) { return v30.Parse(b) },
	"3.1.0": func(b []byte) (any, report.Report, error) { return v31.ParseCompatibleVersion(b) },
	"3.2.0": func(b []byte) (any, report.Report, error) { return v32.ParseCompatibleVersion(b) },
	"3.3.0": func(b []byte) (any, report.Report, error) { return v33.ParseCompatibleVersion(b) },
	"3.4.0": func(b []byte) (any, report.Report, error) { return v34.ParseCompatibleVersion(b) },
	"3.5.0": func(b []byte) (any, report.Report, error) { return v35.ParseCompatibleVersion(b) },
	"3.6.0": func(b []byte) (any, report.Report, error) { return v36.ParseCompatibleVersion(b) },
}

// copyAll copies a tree of regular files, at any depth, into a new temporary directory.
func copyAll(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// readTree reads every file of a tree, by path relative to it.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out[rel], _ = os.ReadFile(p)
		}
		return err
	})
	return out
}

var docSep = regexp.MustCompile(`(?m)^(---|\.\.\.)[ \t]*$`)

// kubeObjects reads a file's objects as Kubernetes' YAML reader does,
// Lists and arrays flattened; independent of the code under test.
func kubeObjects(t *testing.T, name string, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	var add func(v any)
	add = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, it := range x {
				add(it)
			}
		case map[string]any:
			if items, ok := x["items"].([]any); ok && strings.HasSuffix(x["kind"].(string), "List") {
				add(items)
				return
			}
			out = append(out, x)
		}
	}
	for _, doc := range docSep.Split(string(b), -1) {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var v any
		if err := json.Unmarshal(js, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		add(v)
	}
	return out
}

// equivalentByIgnition checks that every object of after is the one of
// before but for spec.config, and that each config reads, by Ignition's
// parser of the spec before declared, as the config before; it returns
// how many configs declare another spec.
func equivalentByIgnition(t *testing.T, name string, before, after []byte) (lowered int) {
	t.Helper()
	bo, ao := kubeObjects(t, name, before), kubeObjects(t, name, after)
	if len(bo) != len(ao) {
		t.Fatalf("%s: %d objects, then %d", name, len(bo), len(ao))
	}
	for i := range bo {
		bc, ac := takeConfig(bo[i]), takeConfig(ao[i])
		if !reflect.DeepEqual(bo[i], ao[i]) {
			t.Errorf("%s: object %d changed outside spec.config", name, i)
		}
		if bc == nil || reflect.DeepEqual(bc, ac) {
			continue
		}
		bv := bc["ignition"].(map[string]any)["version"].(string)
		parse := ignitionParsers[bv]
		if parse == nil {
			t.Errorf("%s: object %d: spec %s rewritten", name, i, bv)
			continue
		}
		bj, _ := json.Marshal(bc)
		aj, _ := json.Marshal(ac)
		want, _, err1 := parse(bj)
		got, _, err2 := parse(aj)
		// Compared as Ignition's types marshal: an empty list is none.
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if err1 != nil || err2 != nil || !bytes.Equal(wj, gj) {
			t.Errorf("%s: object %d: Ignition %s reads the lowered config otherwise (%v, %v):\n%s\n%s", name, i, bv, err1, err2, bj, aj)
		}
		if av := ac["ignition"].(map[string]any)["version"].(string); av != bv {
			lowered++
		}
	}
	return lowered
}

// takeConfig removes and returns an object's spec.config, when an object.
func takeConfig(o map[string]any) map[string]any {
	spec, _ := o["spec"].(map[string]any)
	if spec == nil {
		return nil
	}
	c, _ := spec["config"].(map[string]any)
	delete(spec, "config")
	return c
}

// TestLowerTrees lowers copies of the fixtures and of the real clusters'
// MachineConfigs: Ignition reads every config as before, only version
// lines change, and a second run changes nothing.
func TestLowerTrees(t *testing.T) {
	trees := []string{"fixtures"}
	for _, rel := range []string{"realdata", "mco-testdata"} {
		if p, ok := shareddata.Optional(t, rel); ok {
			trees = append(trees, p)
		}
	}
	toRoot(t)
	for _, tree := range trees {
		t.Run(filepath.Base(tree), func(t *testing.T) {
			dir := copyAll(t, tree)
			before := readTree(t, dir)
			if _, _, code := cli(t, "", "lower", "--check", dir); code != exitWouldLower {
				t.Fatalf("--check before: exit %d, want %d", code, exitWouldLower)
			}
			if got := readTree(t, dir); !reflect.DeepEqual(got, before) {
				t.Fatal("--check changed files")
			}
			out, errs, code := cli(t, "", "lower", dir)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			after := readTree(t, dir)
			lowered := 0
			for name, b := range before {
				a := after[name]
				if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" && ext != ".json" {
					if !bytes.Equal(a, b) {
						t.Errorf("%s rewritten", name)
					}
					continue
				}
				lowered += equivalentByIgnition(t, name, b, a)
				onlyVersionLines(t, name, b, a)
			}
			if n := strings.Count(out, " → "); lowered == 0 || n != lowered {
				t.Errorf("%d configs lowered, %d reported:\n%s", lowered, n, out)
			}
			t.Logf("%d MachineConfigs lowered", lowered)
			if _, errs, code := cli(t, "", "lower", dir); code != exitOK || !reflect.DeepEqual(readTree(t, dir), after) {
				t.Errorf("a second run changed files (exit %d): %s", code, errs)
			}
			if out, _, code := cli(t, "", "lower", "--check", dir); code != exitOK || out != "" {
				t.Errorf("--check after: exit %d: %s", code, out)
			}
		})
	}
}

// onlyVersionLines checks that a rewrite changed ignition.version's lines
// alone.
func onlyVersionLines(t *testing.T, name string, before, after []byte) {
	t.Helper()
	b, a := strings.Split(string(before), "\n"), strings.Split(string(after), "\n")
	if len(a) != len(b) {
		t.Errorf("%s: %d lines, then %d", name, len(b), len(a))
		return
	}
	for i := range b {
		if a[i] != b[i] && !strings.Contains(b[i], "version") {
			t.Errorf("%s:%d: %q rewritten %q", name, i+1, b[i], a[i])
		}
	}
}

// TestLowerGolden lowers testdata/lower (comments, quoting and flow styles,
// several documents, a List, JSON, keys a lower spec lacks, a config that
// must be written whole) and compares each file and what render lower
// said with its golden copy; every comment is kept but those on the line
// of a key deleted, and a second run changes nothing.
func TestLowerGolden(t *testing.T) {
	src := filepath.Join("testdata", "lower")
	dir := copyAll(t, src)
	before := readTree(t, dir)
	out, errs, code := cli(t, "", "lower", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	transcript := strings.ReplaceAll("stdout:\n"+out+"stderr:\n"+errs, dir, src)
	check(t, filepath.Join("testdata", "golden", "lower", "transcript.txt"), transcript)
	after := readTree(t, dir)
	for name, b := range before {
		check(t, filepath.Join("testdata", "golden", "lower", name), string(after[name]))
		equivalentByIgnition(t, name, b, after[name])
		for _, c := range comments(string(b)) {
			if !strings.Contains(string(after[name]), c) && !slices.Contains(lostComments[name], c) {
				t.Errorf("%s: comment %q lost", name, c)
			}
		}
	}
	if _, _, code := cli(t, "", "lower", dir); code != exitOK || !reflect.DeepEqual(readTree(t, dir), after) {
		t.Errorf("a second run changed files (exit %d)", code)
	}
}

// lostComments are on the lines of keys a lower spec lacks, deleted.
var lostComments = map[string][]string{
	"list.yaml": {" # empty: 3.0.0 has no kernelArguments"},
	"item.yaml": {" # on the deleted key's line"},
}

var comment = regexp.MustCompile(`(?m)(^|\s)#.*$`)

func comments(s string) []string { return comment.FindAllString(s, -1) }

// TestLowerCheck runs render lower --check and the bad inputs: exit codes
// and what each names.
func TestLowerCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lowest := filepath.Join("testdata", "lower", "lowest.yaml")
	commented := filepath.Join("testdata", "lower", "commented.yaml")
	multi := filepath.Join("testdata", "lower", "multi.yaml")
	list := filepath.Join("testdata", "lower", "list.yaml")
	luks := filepath.Join("..", "..", "fixtures", "features", "luks-3.2")
	mc := "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: bad\n  labels:\n    machineconfiguration.openshift.io/role: worker\nspec:\n"
	syntax := write("syntax.yaml", mc+"  config:\n    ignition: {version: 3.5.0\n")
	typo := write("typo.yaml", mc+"  kernelArgs:\n  - nosmt\n")
	cfgTypo := write("cfgtypo.yaml", mc+"  config:\n    ignition:\n      version: 3.2.0\n    storage:\n      filez:\n      - path: /etc/x\n")
	tang := write("tang.yaml", mc+`  config: {"ignition":{"version":"3.5.0"},"storage":{"luks":[{"name":"data","device":"/dev/vdb","clevis":{"tang":[{"url":"http://tang.example","thumbprint":"abc","advertisement":"{\"payload\":\"eyJrZXlzIjpbXX0\",\"protected\":\"eyJhbGciOiJFUzUxMiJ9\",\"signature\":\"c2ln\"}"}]}}]}}`+"\n")
	for _, c := range []struct {
		name string
		args []string
		code int
		out  []string // on stdout
		errs []string // on stderr
	}{
		{"lowest", []string{lowest}, exitOK, nil, nil},
		{"not-lowest", []string{commented, lowest}, exitWouldLower,
			[]string{commented + ":14: MachineConfig/99-worker-chrony (document 1): declares spec 3.4.0; the webhook stores it at spec 3.0.0"},
			[]string{"1 MachineConfig in 1 file not at the lowest spec"}},
		{"multi-document", []string{multi}, exitWouldLower, []string{multi + ":10: MachineConfig/50-worker-motd (document 1): declares spec 3.5.0"}, nil},
		{"list", []string{list}, exitWouldLower, []string{
			list + ":12: MachineConfig/60-worker-json (document 1, items.0): declares spec 3.3.0; the webhook stores it at spec 3.0.0",
			list + ":22: MachineConfig/60-master-kargs (document 1, items.1): declares spec 3.4.0"}, nil},
		{"ceiling", []string{"--max-spec", "3.1.0", luks}, exitCeiling, nil, []string{
			"50-worker-luks.yaml:16: MachineConfig/50-worker-luks (document 1): $.spec.config.storage.luks.0: LUKS volumes need Ignition spec 3.2.0; --max-spec 3.1.0 reads only up to 3.1.0",
			"needs spec 3.2.0, above --max-spec 3.1.0", "raise --max-spec"}},
		// Spec 3.4.0 can write it, but Ignition's 3.5 reader would lose the
		// advertisement: kept at 3.5.0, as the webhook keeps it, and named.
		{"ceiling-lost", []string{"--max-spec", "3.4.0", tang}, exitCeiling, nil, []string{
			tang + ":8: MachineConfig/bad (document 1): notice: spec.config stored as written",
			tang + ":8: MachineConfig/bad (document 1): $.spec.config.storage.luks.0.clevis.tang.0.advertisement: Tang advertisements: kept at Ignition spec 3.5.0, above --max-spec 3.4.0: stored at 3.4.0, ",
			"needs spec 3.5.0, above --max-spec 3.4.0"}},
		{"ceiling-met", []string{"--max-spec", "3.2.0", luks}, exitWouldLower, nil, nil},
		{"yaml-syntax", []string{syntax}, exitInvalid, nil, []string{syntax + ":9:5: invalid YAML"}},
		{"typo-field", []string{typo}, exitInvalid, nil, []string{typo + ":8:3: MachineConfig/bad: $.spec.kernelArgs: "}},
		{"typo-config", []string{cfgTypo}, exitInvalid, nil, []string{cfgTypo + ":12:7: MachineConfig/bad (document 1): $.spec.config.storage.filez: unknown key"}},
		{"no-path", nil, exitUsage, nil, []string{"no PATH given"}},
		{"stdin-twice", []string{"-", "-"}, exitUsage, nil, []string{"stdin"}},
		{"missing", []string{filepath.Join(dir, "nope")}, exitInvalid, nil, []string{"nope"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := cli(t, "", append([]string{"lower", "--check"}, c.args...)...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errs)
			}
			for _, w := range c.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range c.errs {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
	for _, p := range []string{syntax, typo, cfgTypo} {
		b, _ := os.ReadFile(p)
		if _, _, code := cli(t, "", "lower", p); code != exitInvalid {
			t.Errorf("%s: exit %d", p, code)
		}
		if after, _ := os.ReadFile(p); !bytes.Equal(after, b) {
			t.Errorf("%s rewritten", p)
		}
	}
}

// TestLowerStdin: "-" reads stdin and writes the file to stdout, saying
// what it did on stderr.
func TestLowerStdin(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "lower", "commented.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := cli(t, string(in), "lower", "-")
	want := strings.Replace(string(in), `version: "3.4.0"`, `version: "3.0.0"`, 1)
	if code != exitOK || out != want || !strings.Contains(errs, "<stdin>:14: MachineConfig/99-worker-chrony (document 1): spec 3.4.0 → 3.0.0") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestLowerInPlace: a file is rewritten where a symbolic link leads, the
// link kept, once however many links lead to it, its mode kept.
func TestLowerInPlace(t *testing.T) {
	dir := t.TempDir()
	in, err := os.ReadFile(filepath.Join("testdata", "lower", "commented.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real.yaml")
	if err := os.WriteFile(real, in, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink("real.yaml", link); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cli(t, "", "lower", dir)
	if code != exitOK || strings.Count(out, " → ") != 1 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	fi, err := os.Stat(real)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600: %v", fi.Mode(), err)
	}
	b, _ := os.ReadFile(real)
	if !bytes.Contains(b, []byte(`version: "3.0.0"`)) {
		t.Errorf("not lowered:\n%s", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("%d entries: a temporary file left behind?", len(ents))
	}
}

// A rewrite keeps what an edit in place would: the owner (where the
// caller may set it: root, as CI runs) and the set-id bits; a file with
// hard links is refused, not split.
func TestLowerInPlaceKeepsOwnerAndLinks(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "lower", "commented.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("owner and set-id bits", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("changing a file's owner needs root")
		}
		dir := t.TempDir()
		f := filepath.Join(dir, "mc.yaml")
		if err := os.WriteFile(f, in, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f, 1234, 1235); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, 0o640|os.ModeSetgid); err != nil {
			t.Fatal(err)
		}
		if out, errs, code := cli(t, "", "lower", f); code != exitOK {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 1234 || st.Gid != 1235 || fi.Mode() != 0o640|os.ModeSetgid {
			t.Errorf("owner %d:%d mode %v, want 1234:1235 %v", st.Uid, st.Gid, fi.Mode(), 0o640|os.ModeSetgid)
		}
	})
	t.Run("hard links", func(t *testing.T) {
		dir := t.TempDir()
		f := filepath.Join(dir, "mc.yaml")
		if err := os.WriteFile(f, in, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(f, filepath.Join(dir, "other.txt")); err != nil {
			t.Fatal(err)
		}
		_, errs, code := cli(t, "", "lower", f)
		if code == exitOK || !strings.Contains(errs, "has 2 hard links") {
			t.Errorf("exit %d, stderr:\n%s", code, errs)
		}
		if b, _ := os.ReadFile(f); !bytes.Equal(b, in) {
			t.Error("the linked file was changed")
		}
	})
}
