package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// workflow is the part of a GitHub Actions workflow the test runs.
type workflow struct {
	Env  map[string]string `json:"env"`
	Jobs map[string]struct {
		Steps []struct {
			Name string            `json:"name"`
			Uses string            `json:"uses"`
			Run  string            `json:"run"`
			With map[string]string `json:"with"`
		} `json:"steps"`
	} `json:"jobs"`
}

// TestExampleWorkflow runs the run: steps of docs/ci/render-diff.yml as
// Actions would (bash -eo pipefail, its env, GITHUB_PATH between steps),
// on a workspace laid out as its checkout steps leave it: the change at the
// root, the base in .base, mcs in .mcs.
func TestExampleWorkflow(t *testing.T) {
	toRoot(t)
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			testkit.Missing(t, "%s is needed: %v", tool, err)
		}
	}
	raw, err := os.ReadFile(filepath.Join("docs", "ci", "render-diff.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	repo, _ := os.Getwd()
	for _, c := range []struct {
		name       string
		head       string
		failedStep string // the step that fails, "" for none
		stdout     string // what the steps print
	}{
		{"luks-discard", "luks-discard", "Annotate the pull request, and fail on a spec raise or a lost era",
			"::error file=" + filepath.Join(wf.Env["TREE"], "50-worker-luks.yaml") + ",line=19,col=9,title=pool worker::spec 3.0.0 → 3.4.0: $.storage.luks.0.discard"},
		{"no change", "base", "", "::notice title=render diff::no changes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			copyTree(t, filepath.Join(diffDir, c.head), filepath.Join(ws, wf.Env["TREE"]))
			copyTree(t, filepath.Join(diffDir, "base"), filepath.Join(ws, ".base", wf.Env["TREE"]))
			if err := os.Symlink(repo, filepath.Join(ws, ".mcs")); err != nil {
				t.Fatal(err)
			}
			out, failed := runSteps(t, wf, ws)
			if failed != c.failedStep {
				t.Fatalf("failed step %q, want %q\n%s", failed, c.failedStep, out)
			}
			if !strings.Contains(out, c.stdout) {
				t.Fatalf("the steps do not print %q:\n%s", c.stdout, out)
			}
		})
	}
}

// runSteps runs every run: step in order until one fails, returning what
// they printed and the name of the failed step.
func runSteps(t *testing.T, wf workflow, ws string) (string, string) {
	t.Helper()
	temp := t.TempDir()
	ghPath, summary := filepath.Join(temp, "github_path"), filepath.Join(temp, "step_summary")
	env := os.Environ()
	for k, v := range wf.Env {
		env = append(env, k+"="+v)
	}
	env = append(env, "GITHUB_WORKSPACE="+ws, "RUNNER_TEMP="+temp, "GITHUB_PATH="+ghPath, "GITHUB_STEP_SUMMARY="+summary, "CI=true")
	var out bytes.Buffer
	ran := 0
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			if s.Run == "" {
				continue
			}
			if strings.Contains(s.Run, "${{") {
				t.Fatalf("step %q: a run: line with an expression cannot be run here; use env", s.Name)
			}
			ran++
			cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.Run)
			cmd.Dir, cmd.Stdout, cmd.Stderr = ws, &out, &out
			cmd.Env = append(env, "PATH="+actionsPath(t, ghPath))
			err := cmd.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return out.String(), s.Name
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if ran < 3 {
		t.Fatalf("only %d run: steps", ran)
	}
	if b, _ := os.ReadFile(summary); len(b) == 0 {
		t.Error("nothing written to the step summary")
	}
	return out.String(), ""
}

// actionsPath is PATH with what steps added to GITHUB_PATH before it.
func actionsPath(t *testing.T, ghPath string) string {
	b, err := os.ReadFile(ghPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var dirs []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			dirs = append([]string{l}, dirs...)
		}
	}
	return strings.Join(append(dirs, os.Getenv("PATH")), string(os.PathListSeparator))
}

// copyTree copies a fixture tree, symbolic links as the files they name.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
