package shareddata

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoot(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		ok        bool
	}{
		{"from the environment", t.TempDir(), true},
		{"missing directory", filepath.Join(t.TempDir(), "none"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envVar, tc.env)
			got, err := Root()
			if (err == nil) != tc.ok || tc.ok && got != tc.env {
				t.Fatalf("Root() = %q, %v", got, err)
			}
		})
	}
}

// Beside the module root, found upwards from the working directory.
func TestRootBesideModule(t *testing.T) {
	t.Setenv(envVar, "")
	parent := t.TempDir()
	mod := filepath.Join(parent, "clone")
	pkg := filepath.Join(mod, "a", "b")
	for _, d := range []string{pkg, filepath.Join(parent, "shared", "realdata")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	if p, ok := Lookup("realdata"); !ok || p != filepath.Join(parent, "shared", "realdata") {
		t.Fatalf("Lookup = %q, %v", p, ok)
	}
	if _, ok := Lookup("mco-testdata"); ok {
		t.Fatal("Lookup found a missing directory")
	}
}

// Missing data fails the test under CI and skips it elsewhere.
func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		ci   string
		fail bool
	}{{"", false}, {"true", true}, {"1", false}} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			msg, fail := verdict(os.ErrNotExist)
			if fail != tc.fail || !strings.Contains(msg, "file does not exist") {
				t.Fatalf("verdict = %q, %v", msg, fail)
			}
		})
	}
}

func TestPathPresent(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "realdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envVar, dir)
	if got := Path(t, "realdata"); got != filepath.Join(dir, "realdata") {
		t.Fatalf("Path = %q", got)
	}
}
