package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// cli runs the command as main would, from the repository root so paths in
// its output read as a user sees them.
func cli(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), cmdline.Code(err)
}

func toRoot(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
}

// TestGolden renders every fixture set in every output format.
func TestGolden(t *testing.T) {
	toRoot(t)
	sets, _ := filepath.Glob(filepath.Join("fixtures", "features", "*"))
	sets = append([]string{filepath.Join("fixtures", "cluster")}, sets...)
	for _, set := range sets {
		name := strings.ReplaceAll(strings.TrimPrefix(set, "fixtures"+string(filepath.Separator)), string(filepath.Separator), "-")
		t.Run(name, func(t *testing.T) {
			golden := filepath.Join("cmd", "render", "testdata", "golden", name)
			out, errs, code := cli(t, "", "--pretty", set)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			check(t, filepath.Join(golden, "machineconfig.json"), out)
			explain, _, _ := cli(t, "", "--explain", set)
			check(t, filepath.Join(golden, "explain.txt"), explain)
			for _, pool := range poolsIn(t, out) {
				ign, errs, code := cli(t, "", "--format", "ignition", "--pool", pool, set)
				if code != exitOK {
					t.Fatalf("exit %d: %s", code, errs)
				}
				check(t, filepath.Join(golden, pool+".ign"), ign)
			}
			again, _, _ := cli(t, "", "--pretty", set)
			if again != out {
				t.Error("a second render differs from the first")
			}
		})
	}
}

// poolsIn reads the pool names back from rendered names.
func poolsIn(t *testing.T, out string) []string {
	var pools []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, `"name": "rendered-`); ok {
			pools = append(pools, rest[:strings.LastIndex(rest, "-")])
		}
	}
	if len(pools) == 0 {
		t.Fatalf("no pools in output:\n%s", out)
	}
	return pools
}

func check(t *testing.T, path, got string) {
	t.Helper()
	testkit.Golden(t, path, got, *update)
}

func TestExitCodes(t *testing.T) {
	toRoot(t)
	luks := filepath.Join("fixtures", "features", "luks-3.2")
	cluster := filepath.Join("fixtures", "cluster")
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "a.yaml"), []byte("kind: MachineConfig\nmetadata: {name: a, labels: {machineconfiguration.openshift.io/role: worker}}\nspec: {kernelType: rt, extensions: [wasm]}\n"), 0o644)
	// Butane drops a key it does not know with a warning; a MachineConfig
	// that loses a file's contents to a typo must not render.
	typo := filepath.Join(t.TempDir(), "99-worker-x.bu")
	os.WriteFile(typo, []byte("variant: openshift\nversion: 4.14.0\nmetadata:\n  name: 99-worker-x\n  labels:\n    machineconfiguration.openshift.io/role: worker\n"+
		"storage:\n  files:\n    - path: /etc/x\n      contnts:\n        inline: lost\n"), 0o644)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // a line it must contain
	}{
		{"ok", []string{luks}, exitOK, ""},
		{"flags after paths", []string{luks, "--pool", "worker", "--max-spec", "3.2.0"}, exitOK, ""},
		{"no path", nil, exitUsage, "no PATH given"},
		{"unknown flag", []string{"--bogus", luks}, exitUsage, "unknown flag --bogus"},
		{"bad version", []string{"--max-spec", "3.9.0", luks}, exitUsage, `--max-spec: invalid value "3.9.0": cannot write spec version`},
		{"not a version", []string{"--min-spec", "three", luks}, exitUsage, `--min-spec: invalid value "three"`},
		{"spec with bounds", []string{"--spec", "3.5.0", "--max-spec", "3.5.0", luks}, exitUsage, "cannot be combined"},
		{"bounds inverted", []string{"--min-spec", "3.4.0", "--max-spec", "3.2.0", luks}, exitUsage, "below"},
		{"empty bounds are the defaults", []string{"--min-spec=", "--max-spec=", "--default-spec=", luks}, exitOK, ""},
		{"unknown format", []string{"--format", "yaml", luks}, exitUsage, `--format: invalid value "yaml": want one of machineconfig, ignition`},
		{"unknown pool", []string{"--pool", "gpu", luks}, exitUsage, `unknown pool "gpu"`},
		{"ignition of two pools to stdout", []string{"--format", "ignition", cluster}, exitUsage, "--format ignition writes one pool"},
		{"missing path", []string{filepath.Join(bad, "nope")}, exitInvalid, "no such file"},
		{"invalid input, every problem", []string{bad}, exitInvalid, "a.yaml:3:37: MachineConfig/a: $.spec.extensions.0: extension \"wasm\""},
		{"misspelled Butane key", []string{typo}, exitInvalid, typo + ":10:7: MachineConfig/99-worker-x: $.storage.files.0.contnts: butane openshift 4.14.0: unused key contnts: Butane would drop it (a typo, or a newer release's field); did you mean contents?"},
		{"ceiling", []string{"--max-spec", "3.1.0", luks}, exitCeiling,
			"fixtures/features/luks-3.2/50-worker-luks.yaml:16:9: MachineConfig/50-worker-luks: $.spec.config.storage.luks.0: LUKS volumes need spec 3.2.0, above the ceiling 3.1.0 of pool worker"},
		{"forced spec below the content", []string{"--spec", "3.1.0", luks}, exitCeiling, "above the ceiling 3.1.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := cli(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, tc.code, errs)
			}
			if !strings.Contains(errs, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errs)
			}
			if tc.code != exitOK && out != "" {
				t.Errorf("stdout carries more than output on failure: %q", out)
			}
		})
	}
	// Both problems of the invalid set are reported, one per line.
	_, errs, _ := cli(t, "", bad)
	if lines := strings.Split(strings.TrimSpace(errs), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "$.spec.kernelType") {
		t.Errorf("stderr %q, want both problems", errs)
	}
}

func TestVersionAndHelp(t *testing.T) {
	out, _, code := cli(t, "", "--version")
	if code != exitOK || !strings.HasPrefix(out, "render (mcs) ") || !strings.Contains(out, "3.6.0") {
		t.Errorf("version %q exit %d", out, code)
	}
	for _, arg := range []string{"--help", "-h"} {
		out, errs, code := cli(t, "", arg)
		if code != exitOK || !strings.Contains(out, "Usage: render") || !strings.Contains(out, "Examples:") || !strings.Contains(out, "-max-spec") || errs != "" {
			t.Errorf("%s: exit %d, stdout %q", arg, code, out)
		}
	}
}

func TestOutputToFiles(t *testing.T) {
	toRoot(t)
	cluster := filepath.Join("fixtures", "cluster")
	dir := t.TempDir()

	t.Run("directory", func(t *testing.T) {
		out := filepath.Join(dir, "out") + string(filepath.Separator)
		stdout, errs, code := cli(t, "", "-o", out, "--format", "ignition", cluster)
		if code != exitOK || stdout != "" {
			t.Fatalf("exit %d stdout %q stderr %s", code, stdout, errs)
		}
		for _, pool := range []string{"master", "worker"} {
			got, err := os.ReadFile(filepath.Join(out, pool+".ign"))
			if err != nil {
				t.Fatal(err)
			}
			want, _, _ := cli(t, "", "--format", "ignition", "--pool", pool, cluster)
			if string(got) != want {
				t.Errorf("%s.ign differs from stdout output", pool)
			}
		}
		ents, _ := os.ReadDir(out)
		if len(ents) != 2 {
			t.Errorf("directory holds %d entries, want 2 (no temporary files left)", len(ents))
		}
	})
	t.Run("file", func(t *testing.T) {
		f := filepath.Join(dir, "all.json")
		os.WriteFile(f, []byte("old"), 0o644)
		_, errs, code := cli(t, "", "-o", f, cluster)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		got, _ := os.ReadFile(f)
		want, _, _ := cli(t, "", cluster)
		if string(got) != want || !strings.Contains(want, `"kind":"List"`) {
			t.Errorf("file %q", got)
		}
	})
	t.Run("nothing written on failure", func(t *testing.T) {
		f := filepath.Join(dir, "luks.json")
		_, _, code := cli(t, "", "-o", f, "--max-spec", "3.1.0", filepath.Join("fixtures", "features", "luks-3.2"))
		if _, err := os.Stat(f); code != exitCeiling || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("exit %d, file %v", code, err)
		}
	})
	t.Run("explain and write", func(t *testing.T) {
		f := filepath.Join(dir, "x.json")
		out, _, code := cli(t, "", "--explain", "-o", f, "--pool", "worker", cluster)
		if _, err := os.Stat(f); code != exitOK || err != nil || !strings.HasPrefix(out, "pool worker: rendered-worker-") {
			t.Errorf("exit %d, file %v, stdout %q", code, err, out)
		}
	})
}

func TestStdin(t *testing.T) {
	toRoot(t)
	data, err := os.ReadFile(filepath.Join("fixtures", "features", "luks-3.2", "50-worker-luks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := cli(t, string(data), "--format", "ignition", "-")
	if code != exitOK || !strings.Contains(out, `"version":"3.2.0"`) {
		t.Fatalf("exit %d stdout %q stderr %s", code, out, errs)
	}
}

func TestNoticesOnStderr(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("kind: MachineConfig\nmetadata: {name: a, labels: {machineconfiguration.openshift.io/role: worker}}\nspec: {}\n---\nkind: KubeletConfig\nmetadata: {name: k}\n"), 0o644)
	out, errs, code := cli(t, "", "--format", "ignition", dir)
	if code != exitOK || !strings.Contains(errs, "KubeletConfig/k: $: notice:") || out != `{"ignition":{"version":"3.0.0"}}`+"\n" {
		t.Errorf("exit %d stdout %q stderr %q", code, out, errs)
	}
}
