package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/hazards"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
)

// Every hazard in a tree gets its warning or error naming it, promptly, and
// the load's peak RSS stays under twice that of the same tree without it.
func TestLoadHazards(t *testing.T) {
	for _, c := range hazards.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			dir := testkit.WriteTree(t, map[string]string{"10-a.yaml": doc("10-a", "worker", "")})
			if c.Unprivileged {
				hazards.Searchable(t, dir)
			}
			load := func() (*Loader, error) {
				l := &Loader{Limits: Limits{MaxFileSize: hazards.GrowLimit}}
				var err error
				run := func() { l.Path(dir); _, err = l.Set() }
				if c.Unprivileged {
					run = func() { hazards.Unprivileged(t, func() { l.Path(dir); _, err = l.Set() }) }
				}
				done := make(chan struct{})
				go func() { defer close(done); run() }()
				select {
				case <-done:
				case <-time.After(20 * time.Second):
					t.Fatal("the load hung")
				}
				return l, err
			}
			hazards.ResetPeakRSS(t)
			if _, err := load(); err != nil {
				t.Fatal(err)
			}
			normal := hazards.PeakRSS(t)

			p := filepath.Join(dir, "97-x.yaml")
			if stop := c.Make(t, p); stop != nil {
				defer stop()
			}
			if c.Unprivileged {
				var err error
				hazards.Unprivileged(t, func() { _, err = os.ReadFile(p) })
				if !errors.Is(err, fs.ErrPermission) {
					t.Fatalf("the setup did not make %s unreadable: %v", p, err)
				}
			}
			hazards.ResetPeakRSS(t)
			l, err := load()
			peak := hazards.PeakRSS(t)

			var got []*render.Error
			var es *render.Errors
			switch {
			case c.Error && !errors.As(err, &es):
				t.Fatalf("load error %v, want one naming %s", err, p)
			case c.Error:
				got = es.List
			case err != nil:
				t.Fatalf("load error %v, want a warning", err)
			default:
				got = l.Skipped()
			}
			if !hasProblem(got, p, c) {
				t.Fatalf("no problem naming %s and matching %q in:\n%v", p, c.Want, (&render.Errors{List: got}).Error())
			}
			if peak > 2*normal {
				t.Errorf("peak RSS %s, over twice the %s of the load without the hazard", hazards.MiB(peak), hazards.MiB(normal))
			}
			t.Logf("peak RSS: %s without the hazard, %s with it", hazards.MiB(normal), hazards.MiB(peak))
		})
	}
}

func hasProblem(list []*render.Error, p string, c hazards.Case) bool {
	for _, e := range list {
		if strings.HasPrefix(e.File, p) && c.Want.MatchString(e.Message) {
			return true
		}
	}
	return false
}

// A file that grows between its open and its read is read no further than
// the limit plus one byte.
func TestReadStopsPastTheLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "grows.yaml")
	if err := os.WriteFile(p, []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, info, err := openRegular(osFiles{}, p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, 3<<20))
	w.Close()
	const limit = 1 << 20
	data, err := readAtMost(f, info.Size(), limit)
	var se *sizeError
	if !errors.As(err, &se) || !se.Grew || se.Size != limit+1 || data != nil {
		t.Fatalf("read %d bytes, err %v; want a sizeError after %d bytes", len(data), err, limit+1)
	}
	if !errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), "grew while it was read: stopped after 1048577 bytes, over the per-file limit of 1048576 bytes") {
		t.Fatalf("error %q", err)
	}
}

// The files of a tree together are bounded too: the file that would pass
// the limit is named, and nothing after it is read.
func TestLoadTreeLimit(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{
		"10-a.yaml": doc("10-a", "worker", ""),
		"20-b.yaml": doc("20-b", "worker", ""),
		"30-c.yaml": doc("30-c", "worker", ""),
	})
	size := int64(len(doc("10-a", "worker", "")))
	var read []string
	l := &Loader{Limits: Limits{MaxTreeSize: size + size/2}, Reading: func(p string) { read = append(read, filepath.Base(p)) }}
	l.Path(dir)
	_, err := l.Set()
	var es *render.Errors
	if !errors.As(err, &es) || len(es.List) != 1 || !errors.Is(es.List[0], errTooLarge) || es.List[0].File != filepath.Join(dir, "20-b.yaml") {
		t.Fatalf("err %v", err)
	}
	want := fmt.Sprintf("file is %d bytes; with the %[1]d bytes read from other files first, over the whole-tree limit of %d bytes; it and the files after it were not read", size, size+size/2)
	if es.List[0].Message != want || len(read) != 2 {
		t.Fatalf("message %q, want %q; read %v", es.List[0].Message, want, read)
	}
}

// A non-regular file named explicitly is an error, not skipped: the caller
// asked for it.
func TestLoadNamedFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.yaml")
	if stop := hazards.Named("fifo").Make(t, p); stop != nil {
		defer stop()
	}
	errs := loadErrs(t, p)
	if len(errs) != 1 || !errors.Is(errs[0], errNotRegular) || errs[0].File != p {
		t.Fatalf("errors %v", errs)
	}
}

// A device or a file whose reads fail, named explicitly (a named file is
// not held to a tree), is refused by its type or read error.
func TestLoadNamedDevice(t *testing.T) {
	for _, c := range []struct{ target, want string }{
		{"/dev/zero", "a character device, so never opened"},
		{"/proc/self/mem", "input/output error"},
	} {
		p := filepath.Join(t.TempDir(), "x.yaml")
		if err := os.Symlink(c.target, p); err != nil {
			t.Fatal(err)
		}
		errs := loadErrs(t, p)
		if len(errs) != 1 || errs[0].File != p || !strings.Contains(errs[0].Message, c.want) {
			t.Errorf("%s: errors %v, want %q", c.target, errs, c.want)
		}
	}
}

// A directory reached twice through links that make no loop is read once,
// with no warning; hidden directories are not read, even when a visible link
// to one is.
func TestWalkTreeLinks(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{".hidden/10-a.yaml": doc("10-a", "worker", "")})
	for _, name := range []string{"one", "two"} {
		if err := os.Symlink(".hidden", filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	l := &Loader{}
	l.Path(dir)
	s, err := l.Set()
	if err != nil || len(s.MachineConfigs()) != 1 || len(l.Skipped()) != 0 {
		t.Fatalf("err %v, skipped %v", err, l.Skipped())
	}
	if got := s.MachineConfigs()[0].Source; got != filepath.Join(dir, "one", "10-a.yaml") {
		t.Fatalf("read from %s", got)
	}
}

// A FIFO that replaces a checked file before its open neither blocks the
// open nor is read.
func TestOpenCheckedFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "swapped.yaml")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, _, err := openChecked(osFiles{}, p)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errNotRegular) || !strings.Contains(err.Error(), "a named pipe (FIFO) (swapped in as it was opened; closed unread)") {
			t.Fatalf("err %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO blocked")
	}
}

// The files a Butane config embeds are held to the same rules before Butane,
// which reads them unchecked, gets to them.
func TestLoadButaneLocalHazards(t *testing.T) {
	cases := []struct {
		name, body, hazard, path, want string
	}{
		{"file contents from a FIFO", "storage:\n  files:\n    - path: /etc/x\n      contents:\n        local: LOCAL\n", "fifo",
			"$.storage.files.0.contents.local", "a named pipe (FIFO), so not read"},
		{"unit contents from /dev/zero", "systemd:\n  units:\n    - name: x.service\n      contents_local: LOCAL\n", "symlink to /dev/zero",
			"$.systemd.units.0.contents_local", "is a symbolic link to /dev/zero, outside the tree"},
		{"a sparse 1 GB file appended", "storage:\n  files:\n    - path: /etc/x\n      append:\n        - local: LOCAL\n", "sparse 1 GB file",
			"$.storage.files.0.append.0.local", "file is 1073741824 bytes, over the per-file limit of 16777216 bytes"},
		{"a tree holding a sparse 1 GB file", "storage:\n  trees:\n    - local: tree\n", "sparse 1 GB file",
			"$.storage.trees.0.local", "file is 1073741824 bytes, over the per-file limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testkit.WriteTree(t, map[string]string{"99-worker-x.bu": butaneHead + strings.ReplaceAll(c.body, "LOCAL", "tree/local")})
			os.Mkdir(filepath.Join(dir, "tree"), 0o755)
			if stop := hazards.Named(c.hazard).Make(t, filepath.Join(dir, "tree", "local")); stop != nil {
				defer stop()
			}
			done := make(chan []*render.Error, 1)
			go func() { done <- loadErrs(t, dir) }()
			var errs []*render.Error
			select {
			case errs = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the load hung")
			}
			if len(errs) != 1 || errs[0].File != filepath.Join(dir, "99-worker-x.bu") || errs[0].Path.String() != c.path ||
				!strings.Contains(errs[0].Message, filepath.Join(dir, "tree", "local")) || !strings.Contains(errs[0].Message, c.want) {
				t.Fatalf("errors %v", errs)
			}
		})
	}
}

// A file over a size limit is refused naming the limit's setting, so the
// admin knows what to raise (and the per-file limit is not the 1.5 MiB a
// rendered MachineConfig may take: TestSizeLimit).
func TestSizeLimitNamesSetting(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{"10-a.yaml": doc("10-a", "worker", strings.Repeat("x", 400))})
	for _, c := range []struct {
		lim  Limits
		want string
	}{
		{Limits{MaxFileSize: 100, FileSetting: "--max-file-size"}, "over the per-file limit of 100 bytes (--max-file-size)"},
		{Limits{MaxTreeSize: 100, TreeSetting: "--max-tree-size"}, "over the whole-tree limit of 100 bytes (--max-tree-size)"},
	} {
		l := &Loader{Limits: c.lim}
		l.Path(dir)
		if _, err := l.Set(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.lim, err, c.want)
		}
	}
}

// Links inside the tree are followed: the same config through two links
// is read twice; a root that is a link is read.
func TestLoadFollowsSymlinks(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{"real/mc.yaml": doc("10-a", "worker", "")})
	for link, to := range map[string]string{"linked": "real", "also.yaml": "real/mc.yaml"} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	errs := loadErrs(t, dir) // the same config twice, through two links
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "duplicate name") {
		t.Fatalf("errors %v", errs)
	}
	if _, err := Load(filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
}

func TestLoadMissingPath(t *testing.T) {
	errs := loadErrs(t, filepath.Join(t.TempDir(), "nope"))
	if len(errs) != 1 || !errors.Is(errs[0], os.ErrNotExist) {
		t.Fatalf("errors %v", errs)
	}
}
