package testkit

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

func TestTable(t *testing.T) {
	var seen []string
	upper := func(s string) string { seen = append(seen, s); return strings.ToUpper(s) }
	Table(t, "upper", upper, map[string]string{"b": "B", "": "", "a": "A"})
	if got := strings.Join(seen, ","); got != ",a,b" {
		t.Errorf("cases run: %q, want every input once, in order", got)
	}
}

func TestCheck(t *testing.T) {
	if msg := check("upper", strings.ToUpper, "a", "A"); msg != "" {
		t.Errorf("a matching case reported %q", msg)
	}
	if msg, want := check("upper", strings.ToUpper, "a", "a"), `upper("a") = "A", want "a"`; msg != want {
		t.Errorf("a wrong case reported %q, want %q", msg, want)
	}
}

// On the fake clock: three intervals make three calls, in order, and none
// comes after stop returns.
func TestEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		stop := Every(t, time.Second, func(i int) {
			if int64(i) != n.Add(1) {
				t.Errorf("call %d out of order", i)
			}
		})
		Advance(3*time.Second + time.Millisecond)
		if n.Load() != 3 {
			t.Errorf("%d calls in three intervals", n.Load())
		}
		stop()
		Advance(time.Minute)
		if n.Load() != 3 {
			t.Errorf("f called after stop returned: %d calls", n.Load())
		}
		stop() // a second stop, and the Cleanup's, are no-ops
	})
}

// Eventually returns once f holds, and fails the test with f's error when
// it does not hold in time.
func TestEventually(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		Eventually(t, time.Second, "three calls", func() error {
			if calls++; calls < 3 {
				return fmt.Errorf("call %d", calls)
			}
			return nil
		})
		ft := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Eventually(ft, time.Second, "never", func() error { return fmt.Errorf("no") })
		}()
		<-done
		if ft.msg != "never: not within 1s: no" {
			t.Errorf("failed with %q", ft.msg)
		}
	})
}

// fatalTB records Fatalf and ends the goroutine as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestSplitCase(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string // nil: an error
	}{
		{"a | b c |d", []string{"a", "b c", "d"}},
		{`name | " padded " | ""`, []string{"name", " padded ", ""}},
		{`x | "a|b\nc" | y`, []string{"x", "a|b\nc", "y"}},
		{"x | | y", []string{"x", "", "y"}},
		{"x |", []string{"x", ""}},
		{`x | "open`, nil},
		{`x | "a" b`, nil},
	} {
		got, err := splitCase(tc.line)
		if (err != nil) != (tc.want == nil) || strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") || len(got) != len(tc.want) {
			t.Errorf("splitCase(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

func TestCases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cases.txt")
	os.WriteFile(path, []byte("# upper cases\n\nlower | abc | ABC\n  # indented comment\nempty | \"\" | \"\"\n"), 0o644)
	var seen []string
	Cases(t, path, 3, func(t *testing.T, f []string) {
		seen = append(seen, t.Name()+"="+f[1]+">"+f[2])
		if got := strings.ToUpper(f[1]); got != f[2] {
			t.Errorf("ToUpper(%q) = %q, want %q", f[1], got, f[2])
		}
	})
	if got, want := strings.Join(seen, ","), "TestCases/lower=abc>ABC,TestCases/empty=>"; got != want {
		t.Errorf("cases run %q, want %q", got, want)
	}
}

func TestToolsDir(t *testing.T) {
	t.Setenv("MCS_TOOLS", "/opt/tools")
	if got := ToolsDir("kube", "etcd"); got != "/opt/tools/kube/etcd" {
		t.Errorf("ToolsDir = %q", got)
	}
	t.Setenv("MCS_TOOLS", "")
	t.Setenv("HOME", "/home/u")
	if got := ToolsDir("ignition"); got != "/home/u/.cache/mcs-tools/ignition" {
		t.Errorf("ToolsDir without MCS_TOOLS = %q", got)
	}
}

func TestExecutable(t *testing.T) {
	dir := t.TempDir()
	run, plain := filepath.Join(dir, "run"), filepath.Join(dir, "plain")
	os.WriteFile(run, nil, 0o755)
	os.WriteFile(plain, nil, 0o644)
	for path, want := range map[string]bool{run: true, plain: false, dir: false, filepath.Join(dir, "none"): false} {
		if got := Executable(path); got != want {
			t.Errorf("Executable(%s) = %v, want %v", path, got, want)
		}
	}
}

// Outside CI a missing tool skips: the rest of the test does not run.
func TestMissingSkips(t *testing.T) {
	t.Setenv("CI", "")
	ran := false
	t.Run("inner", func(t *testing.T) {
		Missing(t, "no %s", "tool")
		ran = true
	})
	if ran {
		t.Error("the test went on past Missing")
	}
}

// A reserved address refuses connections until listen, then accepts them.
func TestReservedAddr(t *testing.T) {
	addr, listen := ReservedAddr(t)
	if c, err := net.Dial("tcp", addr); err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial before listen: %v, want connection refused", err)
	}
	ln := listen()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial after listen: %v", err)
	}
	c.Close()
}
