// Package shareddata finds the project's shared test data (upstream inputs kept beside the clone), so a test that needs it fails under CI when it is missing.
package shareddata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// envVar names the shared data directory when it is not ../shared beside the
// module's root (a worktree elsewhere, say).
const envVar = "MCS_SHARED"

// Root returns the shared data directory: $MCS_SHARED, else "shared" beside
// the directory holding go.mod, found upwards from the working directory
// (a test's is its package's). It is an error when that does not exist.
func Root() (string, error) {
	if d := os.Getenv(envVar); d != "" {
		return existing(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return existing(filepath.Join(filepath.Dir(d), "shared"))
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

func existing(d string) (string, error) {
	info, err := os.Stat(d)
	if err != nil {
		return "", fmt.Errorf("%w (set %s to its directory)", err, envVar)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("shared test data: %s is not a directory", d)
	}
	return d, nil
}

// Path returns rel inside the shared data directory. When it is missing, tb
// fails under CI=true (CI clones the repository beside it) and is skipped
// otherwise, with the reason.
func Path(tb testing.TB, rel ...string) string {
	tb.Helper()
	p, err := lookup(rel)
	if err != nil {
		missing(tb, err)
	}
	return p
}

// Optional returns rel inside the shared data directory for a test that
// also runs on in-repo data: when it is missing, tb fails under CI=true and
// otherwise logs why and gets false.
func Optional(tb testing.TB, rel ...string) (string, bool) {
	tb.Helper()
	p, err := lookup(rel)
	if err == nil {
		return p, true
	}
	if msg, fail := verdict(err); fail {
		tb.Fatal(msg)
	} else {
		tb.Log(msg)
	}
	return "", false
}

// Lookup returns rel inside the shared data directory, or false when it is
// not there: for a benchmark that prefers the full-size data to an in-repo
// stand-in.
func Lookup(rel ...string) (string, bool) {
	p, err := lookup(rel)
	return p, err == nil
}

func lookup(rel []string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	p := filepath.Join(append([]string{root}, rel...)...)
	_, err = os.Stat(p)
	return p, err
}

// missing ends tb for want of the shared data: a failure under CI=true, a
// skip elsewhere.
func missing(tb testing.TB, err error) {
	tb.Helper()
	if msg, fail := verdict(err); fail {
		tb.Fatal(msg)
	} else {
		tb.Skip(msg)
	}
}

func verdict(err error) (msg string, fail bool) {
	if err == nil {
		err = errors.New("missing")
	}
	if os.Getenv("CI") == "true" {
		return fmt.Sprintf("shared test data needed under CI: %v", err), true
	}
	return fmt.Sprintf("shared test data not here: %v", err), false
}
