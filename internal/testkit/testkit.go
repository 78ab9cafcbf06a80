// Package testkit holds the small helpers the tests of every package share that need nothing of mcs.
package testkit

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Table checks f against cases, one subtest a case named by its input, in
// the inputs' order so that a failing run reads the same each time. name is
// what the failure calls f.
func Table[In cmp.Ordered, Out comparable](t *testing.T, name string, f func(In) Out, cases map[In]Out) {
	t.Helper()
	if len(cases) == 0 {
		t.Fatalf("no cases for %s", name)
	}
	for _, in := range slices.Sorted(maps.Keys(cases)) {
		want := cases[in]
		t.Run(fmt.Sprint(in), func(t *testing.T) {
			if msg := check(name, f, in, want); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// check is what Table reports of one case: "" when f(in) is want.
func check[In, Out comparable](name string, f func(In) Out, in In, want Out) string {
	if got := f(in); got != want {
		return fmt.Sprintf("%s(%#v) = %#v, want %#v", name, in, got, want)
	}
	return ""
}

// Eventually calls f every 20ms until it returns nil, failing the test
// with f's last error once within has passed. It is for waiting on what a
// fake clock cannot drive: another process, a real server, the kernel.
func Eventually(tb testing.TB, within time.Duration, what string, f func() error) {
	tb.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s: %v", what, within, err)
		}
		<-tick.C
	}
}

// Advance, inside a testing/synctest bubble, moves the bubble's fake clock
// on by d and returns once every other goroutine in it is blocked again:
// what was due by then has run.
func Advance(d time.Duration) {
	time.Sleep(d) // in a bubble: returns when the fake clock reaches it
	synctest.Wait()
}

// Every calls f(1), f(2), … in a goroutine, one call each interval, until
// the test ends or stop is called; stop returns once f has returned for the
// last time, so that nothing f touches is used after it.
func Every(tb testing.TB, interval time.Duration, f func(i int)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 1; ; i++ {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			f(i)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() { close(quit) })
		<-done
	}
	tb.Cleanup(stop)
	return stop
}

// Cases runs f on each case of the case file at path, one subtest a case
// named by its first field, f getting its n fields, that name first. A case
// file holds one case a line, fields separated by "|" and trimmed of
// spaces; a field in double quotes is a Go string literal, for spaces at
// its ends, an empty string, "|" or a new line. Blank lines and lines
// starting with # are skipped. A failing case logs where it stands.
func Cases(t *testing.T, path string, n int, f func(t *testing.T, fields []string)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cases := 0
	for i, line := range strings.Split(string(data), "\n") {
		if s := strings.TrimSpace(line); s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		pos := fmt.Sprintf("%s:%d", path, i+1)
		fields, err := splitCase(line)
		if err == nil && len(fields) != n {
			err = fmt.Errorf("%d fields, want %d", len(fields), n)
		}
		if err != nil {
			t.Fatalf("%s: %v", pos, err)
		}
		cases++
		t.Run(fields[0], func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the case at %s", pos)
				}
			})
			f(t, fields)
		})
	}
	if cases == 0 {
		t.Fatalf("%s: no cases", path)
	}
}

// splitCase is the fields of one line of a case file.
func splitCase(line string) ([]string, error) {
	var fields []string
	for rest := line; ; {
		rest = strings.TrimLeft(rest, " \t")
		var field string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("field %d: %w", len(fields)+1, err)
			}
			field, _ = strconv.Unquote(q)
			rest = strings.TrimLeft(rest[len(q):], " \t")
			if rest != "" && rest[0] != '|' {
				return nil, fmt.Errorf("field %d: %q after the quoted string", len(fields)+1, rest)
			}
		} else {
			end := strings.IndexByte(rest, '|')
			if end < 0 {
				end = len(rest)
			}
			field, rest = strings.TrimRight(rest[:end], " \t"), rest[end:]
		}
		fields = append(fields, field)
		if rest == "" {
			return fields, nil
		}
		rest = rest[1:] // the "|"
	}
}

// ToolsDir is elem under where the Makefile puts the tools the tests run:
// $MCS_TOOLS, by default ~/.cache/mcs-tools (the Makefile's TOOLS).
func ToolsDir(elem ...string) string {
	tools := os.Getenv("MCS_TOOLS")
	if tools == "" {
		home, _ := os.UserHomeDir()
		tools = filepath.Join(home, ".cache", "mcs-tools")
	}
	return filepath.Join(append([]string{tools}, elem...)...)
}

// Executable reports whether path is a regular file its mode lets someone run.
func Executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Missing ends a test that lacks a tool it needs, saying which: a failure
// under CI=true, where the Makefile installs it and a skip would hide that
// nothing ran; a skip elsewhere.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}

// Golden compares got with the file at path, or with update (each test
// package's -update flag) rewrites the file: a changed message shows as a
// diff of the golden in review.
func Golden(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the output (run with -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// WriteTree writes files (relative path -> contents) under a new temporary
// directory, making the directories they need, and returns it.
func WriteTree(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}
