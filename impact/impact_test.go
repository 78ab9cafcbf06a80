package impact

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

func TestLocatorLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	multi := write("multi.yaml", `kind: MachineConfigPool
metadata: {name: worker}
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: b
spec:
  kernelArguments:
  - nosmt
  - mitigations=auto
  config:
    storage:
      files:
      - path: /etc/a
        mode: 420
      - path: /etc/b
        contents:
          source: data:,x
`)
	list := write("list.json", `{"kind": "List", "items": [
  {"kind": "MachineConfig", "metadata": {"name": "x"}, "spec": {}},
  {"kind": "MachineConfig", "metadata": {"name": "y"},
   "spec": {"fips": true}}
]}`)
	bu := write("x.bu", `variant: openshift
version: 4.14.0
metadata:
  name: z
openshift:
  kernel_arguments:
  - quiet
storage:
  luks:
  - name: data
    discard: true
`)
	cases := []struct {
		name, file, mc string
		path           []string
		want           int
	}{
		{"document of a stream", multi, "b", nil, 4},
		{"field by index", multi, "b", []string{"spec", "config", "storage", "files", "1", "contents", "source"}, 19},
		{"item by field", multi, "b", []string{"spec", "config", "storage", "files", "?path=/etc/b"}, 17},
		{"item by value with =", multi, "b", []string{"spec", "kernelArguments", "~mitigations=auto"}, 11},
		{"missing item: its list", multi, "b", []string{"spec", "kernelArguments", "~quiet"}, 9},
		{"missing object", multi, "nope", nil, 0},
		{"a List item in JSON", list, "y", []string{"spec", "fips"}, 4},
		{"butane: the config at the top", bu, "z", []string{"spec", "config", "storage", "luks", "0", "discard"}, 11},
		{"butane: OpenShift's fields", bu, "z", []string{"spec", "kernelArguments", "~quiet"}, 7},
		{"unreadable file", filepath.Join(dir, "none.yaml"), "b", nil, 0},
	}
	l := newLocator()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, _ := l.line(c.file, c.mc, c.path); got != c.want {
				t.Fatalf("line %d, want %d", got, c.want)
			}
		})
	}
}

func FuzzLocator(f *testing.F) {
	f.Add("kind: MachineConfig\nmetadata: {name: a}\nspec: {config: {storage: {files: [{path: /x}]}}}\n", "spec.config.storage.files.?path=/x")
	f.Add(`[{"kind":"List","items":[{"metadata":{"name":"a"}}]}]`, "spec.~a.0")
	f.Add("- - -\n---\n&a [*a]\n", "0.1")
	f.Fuzz(func(t *testing.T, doc, path string) {
		p := filepath.Join(t.TempDir(), "f.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(doc, "\n") + 1
		n, col := newLocator().line(p, "a", strings.Split(path, "."))
		if n < 0 || n > lines || col < 0 || n > 0 && col < 1 {
			t.Fatalf("line %d col %d of a %d-line file", n, col, lines)
		}
	})
}

func TestValue(t *testing.T) {
	cases := []struct {
		name, field string
		v           any
		want        string
	}{
		{"mode in octal", "mode", 420.0, "0644"},
		{"flag", "overwrite", true, "true"},
		{"number", "uid", 1000.0, "1000"},
		{"a path is shown", "path", "/etc/x", "/etc/x"},
		{"an empty name", "name", "", `""`},
		{"contents digest", "contents.source", "data:,secret", "6 bytes sha256:2bb80d537b1d"},
		{"unit contents", "dropins[x.conf].contents", "secret", "6 bytes sha256:2bb80d537b1d"},
		{"a password hash", "passwordHash", "$6$abc", "6 bytes sha256:"},
		{"a listed group is shown", "groups[0]", "wheel", "wheel"},
		{"absent", "mode", nil, "(none)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := value(c.field, c.v).String(); !strings.HasPrefix(got, c.want) {
				t.Fatalf("%q, want %q", got, c.want)
			}
		})
	}
}

func TestFields(t *testing.T) {
	a, b := leaves{}, leaves{}
	flatten(map[string]any{"path": "/x", "mode": 420.0, "append": []any{map[string]any{"source": "data:,a"}}}, "", a)
	flatten(map[string]any{"path": "/x", "mode": 384.0, "user": map[string]any{"name": "core"}}, "", b)
	var got []string
	for _, f := range fields(a, b) {
		got = append(got, f.describe())
	}
	want := []string{"append[0].source: 1 bytes sha256:ca978112ca1b → (none)", "mode: 0644 → 0600", "user.name: (none) → core"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAcceptFor(t *testing.T) {
	testkit.Table(t, "acceptFor", acceptFor, map[string]string{
		"Ignition/v2.27.0":                "application/vnd.coreos.ignition+json;version=3.6.0, */*;q=0.1",
		"Ignition/v2.9.0":                 "application/vnd.coreos.ignition+json;version=3.2.0, */*;q=0.1",
		"Ignition/v0.35.0":                spec2Accept,
		"Ignition/v2.0.0":                 spec2Accept,
		"Ignition/v2.1.0":                 "application/vnd.coreos.ignition+json;version=3.0.0, */*;q=0.1",
		"curl/8.5.0":                      "*/*",
		"Ignition/was not built properly": "*/*",
	})
}

func TestEraChange(t *testing.T) {
	in, out := &Outcome{Admitted: true}, &Outcome{}
	cases := []struct {
		name     string
		old, new *Outcome
		want     EraChange
	}{
		{"still admitted", in, in, EraStillAdmitted},
		{"newly refused", in, out, EraNewlyRefused},
		{"newly admitted", out, in, EraNewlyAdmitted},
		{"still refused", out, out, EraStillRefused},
		{"new pool admits", nil, in, EraAdmitted},
		{"new pool refuses", nil, out, EraRefused},
		{"pool gone", in, nil, EraGone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := eraChange(c.old, c.new); got != c.want {
				t.Fatalf("%s", got)
			}
		})
	}
}

func TestAnnotateEscapes(t *testing.T) {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	annotate(w, "error", Location{File: "a,b:c.yaml", Line: 3, Tree: "new"}, "pool x", "50% done\nnext")
	annotate(w, "notice", Location{File: ".base/a.yaml", Line: 3, Tree: "old"}, "t", "m")
	w.Flush()
	want := "::error file=a%2Cb%3Ac.yaml,line=3,title=pool x::50%25 done%0Anext\n::notice title=t::m\n"
	if b.String() != want {
		t.Fatalf("%q", b.String())
	}
}

func TestParseFailOn(t *testing.T) {
	got, err := ParseFailOn(" era-loss, spec-raise,era-loss,")
	if err != nil || strings.Join(got, ",") != "era-loss,spec-raise" {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ParseFailOn("spec-raise,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("%v", err)
	}
}

func TestFieldsOfAnAddedItem(t *testing.T) {
	a, b := leaves{}, leaves{}
	flatten(map[string]any{"name": "u", "dropins": []any{map[string]any{"name": "only-name.conf"}}}, "", a)
	flatten(map[string]any{"name": "u", "dropins": []any{map[string]any{"name": "only-name.conf"}, map[string]any{"name": "x.conf", "contents": "[Unit]"}}}, "", b)
	var got []string
	for _, f := range fields(a, b) {
		got = append(got, f.describe())
	}
	if want := "dropins[x.conf].contents: (none) → 6 bytes sha256:"; len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Fatalf("%q, want one field %q…", got, want)
	}
	flatten(map[string]any{"dropins": []any{map[string]any{"name": "bare.conf"}}}, "", b)
	if got := fields(a, b); len(got) != 2 || got[0].Field != "dropins[bare.conf].name" {
		t.Fatalf("an item with only its key must still show: %+v", got)
	}
}

func FuzzParseFailOn(f *testing.F) {
	f.Add("spec-raise,era-loss")
	f.Add(" ,any-change,,ceiling ,ceiling")
	f.Add("bogus")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseFailOn(s)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range got {
			if seen[c] || !slices.Contains(Conditions, c) {
				t.Fatalf("%q gives %q", s, got)
			}
			seen[c] = true
		}
	})
}

// The text names the ceiling a pool's spec is above, not just that it is.
func TestTextStatesTheCeiling(t *testing.T) {
	r := &Report{Old: "base", New: "head", Ceiling: "3.2.0", Changed: true, Holds: Holds{Ceiling: true},
		Pools: []*Pool{{Name: "worker", Status: Changed, Spec: SpecChange{Pair: Pair{Old: "3.2.0", New: "3.4.0"}, Raised: true, AboveCeiling: true}}}}
	var b strings.Builder
	if err := WriteText(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	if want := "spec 3.4.0 is above the ceiling 3.2.0: nodes that read only up to 3.2.0 cannot read it"; !strings.Contains(b.String(), want) {
		t.Errorf("got:\n%s\nwant a line: %s", b.String(), want)
	}
}
