// Package hazards makes the files an operator may drop into a source tree that must neither hang nor exhaust a loader, for tests.
package hazards

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Case is one hazard, put at a path named like a MachineConfig.
type Case struct {
	Name string
	// Make puts the hazard at p and returns what ends it (the growing
	// file's writer), or nil.
	Make func(t testing.TB, p string) (stop func())
	// Error is true when the hazard fails the load (the last good render
	// keeps serving) rather than being skipped with a warning.
	Error bool
	// Want matches the warning or error. A file growing while read may
	// also be read whole between two writes: then it is invalid YAML.
	Want *regexp.Regexp
	// Unprivileged is true when the loader must run without root's
	// override of file modes for the hazard to be one (see Unprivileged).
	Unprivileged bool
}

// GrowLimit is the per-file limit the growing file is meant to pass: it is
// grown to 16 times this, then cut back to just past it and grown again,
// until stopped.
const GrowLimit = 4 << 20

// Cases are every hazard. A test running as root leaves out the
// Unprivileged ones unless it loads through Unprivileged.
func Cases() []Case {
	return []Case{
		{Name: "fifo", Make: fifo, Want: regexp.MustCompile(`a named pipe \(FIFO\), so never opened; skipped`)},
		{Name: "socket", Make: socket, Want: regexp.MustCompile(`a socket, so never opened; skipped`)},
		// A link out of the tree is refused before its target's type is
		// looked at (a named file linking to a device is never opened:
		// TestLoadNamedDevice).
		{Name: "symlink to /dev/zero", Make: symlinkTo("/dev/zero"), Error: true, Want: regexp.MustCompile(`is a symbolic link to /dev/zero, outside the tree .*: not read`)},
		{Name: "sparse 1 GB file", Make: sparse, Error: true, Want: regexp.MustCompile(`file is 1073741824 bytes, over the per-file limit of \d+ bytes`)},
		{Name: "directory symlink loop", Make: dirLoop, Want: regexp.MustCompile(`directory symlink loop: resolves to .*, which contains it; skipped`)},
		{Name: "file symlink loop", Make: selfLink, Error: true, Want: regexp.MustCompile(`too many levels of symbolic links`)},
		{Name: "unreadable file (mode 000)", Make: mode000, Error: true, Want: regexp.MustCompile(`permission denied`), Unprivileged: true},
		// Root reads a mode-000 file; no one reads /proc/self/mem at
		// address 0, a regular file whose every read fails; in a tree, the
		// link to it is refused first (TestLoadNamedDevice reads it).
		{Name: "unreadable file (read fails)", Make: symlinkTo("/proc/self/mem"), Error: true, Want: regexp.MustCompile(`is a symbolic link to /proc/self/mem .*outside the tree`)},
		// Under GrowLimit, over the 1.5 MiB a MachineConfig may be: refused
		// from its size, before its 35,000 files are parsed and validated.
		{Name: "MachineConfig of 35,000 files", Make: manyFiles(35_000), Error: true, Want: regexp.MustCompile(`MachineConfig is \d+ bytes of JSON, above the limit of 1572864 .*not parsed`)},
		{Name: "file growing while read", Make: growing, Error: true,
			Want: regexp.MustCompile(`over the per-file limit|grew while it was read|kept changing while it was read|invalid YAML`)},
	}
}

// Named is the case of that name; it panics on a name not in Cases.
func Named(name string) Case {
	for _, c := range Cases() {
		if c.Name == name {
			return c
		}
	}
	panic("no hazard named " + name)
}

func fifo(t testing.TB, p string) func() {
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	return nil
}

func socket(t testing.TB, p string) func() {
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return nil
}

func symlinkTo(target string) func(testing.TB, string) func() {
	return func(t testing.TB, p string) func() {
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return nil
	}
}

// manyFiles writes a worker MachineConfig of n small files, as JSON.
func manyFiles(n int) func(testing.TB, string) func() {
	return func(t testing.TB, p string) func() {
		var b strings.Builder
		b.WriteString(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"97-many",` +
			`"labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"path":"/etc/many/f%06d","mode":420,"contents":{"source":"data:,x%d"}}`, i, i)
		}
		b.WriteString(`]}}}}`)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return nil
	}
}

func sparse(t testing.TB, p string) func() {
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	return nil
}

// dirLoop is a directory holding a link to the tree's root.
func dirLoop(t testing.TB, p string) func() {
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(p, "up")); err != nil {
		t.Fatal(err)
	}
	return nil
}

func selfLink(t testing.TB, p string) func() {
	if err := os.Symlink(filepath.Base(p), p); err != nil {
		t.Fatal(err)
	}
	return nil
}

func mode000(t testing.TB, p string) func() {
	if err := os.WriteFile(p, []byte("kind: MachineConfig\n"), 0o000); err != nil {
		t.Fatal(err)
	}
	return nil
}

// Searchable opens the directories a test made above dir (t.TempDir makes
// them 0700) to everyone, so that under Unprivileged a file's own mode is
// what refuses its read.
func Searchable(t testing.TB, dir string) {
	for d := dir; strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// growing appends to p without pause, from another goroutine, until
// stopped. It returns once the file is past GrowLimit and never cuts it back
// below: a load that met it still empty read nothing wrong (no error, the
// test's "load error <nil>"), and one that met it a few MiB long parsed an
// ordinary, if odd, YAML file (peak RSS over twice the normal), neither of
// which is the hazard.
func growing(t testing.TB, p string) func() {
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("garbage: [x, "), 1<<20/13)
	floor := int64(GrowLimit/len(chunk)+1) * int64(len(chunk))
	stop, past := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer f.Close()
		var once sync.Once
		defer once.Do(func() { close(past) })
		size := int64(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if size > 16*GrowLimit {
				f.Truncate(floor)
				f.Seek(floor, 0)
				size = floor
			}
			n, err := f.Write(chunk)
			if err != nil {
				return
			}
			size += int64(n)
			if size > GrowLimit {
				once.Do(func() { close(past) })
			}
		}
	}()
	var once sync.Once
	end := func() { once.Do(func() { close(stop); wg.Wait() }) }
	t.Cleanup(end)
	<-past
	return end
}

// Unprivileged runs f on an OS thread whose filesystem user and group are
// nobody's (65534): there even root's file access is checked against file
// modes, as setfsuid clears CAP_DAC_OVERRIDE from that thread alone. The
// thread is thrown away when f returns. Not root: f runs as it is.
func Unprivileged(t testing.TB, f func()) {
	if os.Geteuid() != 0 {
		f()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the runtime ends the thread with the goroutine
		syscall.RawSyscall(syscall.SYS_SETFSGID, 65534, 0, 0)
		syscall.RawSyscall(syscall.SYS_SETFSUID, 65534, 0, 0)
		f()
	}()
	<-done
}

// ResetPeakRSS frees what the heap no longer uses and sets the process's
// peak resident set (VmHWM) to its current one, so PeakRSS then measures
// what comes after.
func ResetPeakRSS(t testing.TB) {
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("resetting the peak RSS: %v", err)
	}
}

// PeakRSS is the process's peak resident set since ResetPeakRSS, in bytes.
func PeakRSS(t testing.TB) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// MiB formats bytes for a log.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
