package tree

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// memoWalker is a Memo on a clock the test sets, and a way to walk a tree
// through it counting the files read.
type memoWalker struct {
	t      *testing.T
	memo   *Memo
	now    time.Time
	opened atomic.Int64
	dir    string
	lim    Limits
}

func newMemoWalker(t *testing.T, files map[string]string) *memoWalker {
	w := &memoWalker{t: t, dir: testkit.WriteTree(t, files), now: time.Now().Add(time.Hour)}
	w.memo = &Memo{Now: func() time.Time { return w.now }, opening: func(string) { w.opened.Add(1) }}
	return w
}

// walk is the tree's entries through the memo, checked against a walk that
// remembers nothing, and how many files it read.
func (w *memoWalker) walk() ([]Entry, int64) {
	w.t.Helper()
	w.opened.Store(0)
	got := w.memo.Entries(w.lim, w.dir)
	if want := noMemo.Entries(w.lim, w.dir); !slices.Equal(got, want) {
		w.t.Fatalf("entries through the memo:\n%v\nwant, as every file read:\n%v", got, want)
	}
	return got, w.opened.Load()
}

func (w *memoWalker) write(name, body string, mtime time.Time) {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		w.t.Fatal(err)
	}
}

// An unchanged tree's second walk reads no file, and the keys are those of
// a walk that reads every file; an edit reads that file alone.
func TestMemoReadsOnlyChangedFiles(t *testing.T) {
	w := newMemoWalker(t, map[string]string{"a.yaml": "one", "d/b.yaml": "two", "d/c.bu": "three"})
	at := time.Unix(1_700_000_000, 0)
	w.write("d/b.yaml", "two", at)
	first, n := w.walk()
	if n != 3 {
		t.Fatalf("first walk read %d files, want 3", n)
	}
	again, n := w.walk()
	if n != 0 || !slices.Equal(again, first) {
		t.Fatalf("unchanged tree: read %d files (want 0), same keys %v", n, slices.Equal(again, first))
	}
	w.write("d/b.yaml", "TWO", at) // same size and mtime: the change time moves
	if now, n := w.walk(); n != 1 || slices.Equal(now, first) {
		t.Errorf("after one edit, read %d files (want 1), keys changed %v", n, !slices.Equal(now, first))
	}
}

// A key taken when the file's times were within racyWindow of the read is
// not trusted: the next walk reads the file again, and once its times are
// old enough the one after does not.
func TestMemoRereadsRacyKey(t *testing.T) {
	w := newMemoWalker(t, map[string]string{"a.yaml": "one", "b.yaml": "two"})
	w.now = time.Now() // the files' change times are this moment's
	if _, n := w.walk(); n != 2 {
		t.Fatalf("first walk read %d files, want 2", n)
	}
	if _, n := w.walk(); n != 2 {
		t.Fatalf("racy keys: second walk read %d files, want 2", n)
	}
	w.now = time.Now().Add(racyWindow + time.Second)
	if _, n := w.walk(); n != 2 {
		t.Fatalf("third walk (the keys were racy) read %d files, want 2", n)
	}
	if _, n := w.walk(); n != 0 {
		t.Fatalf("keys taken well after the writes: fourth walk read %d files, want 0", n)
	}
}

// A file renamed over another of the same size and times (a new inode) is
// read again and its new key seen.
func TestMemoSeesRenameOver(t *testing.T) {
	w := newMemoWalker(t, map[string]string{"a.yaml": "one", ".new": "ONE"})
	at := time.Unix(1_700_000_000, 0)
	w.write("a.yaml", "one", at)
	w.write(".new", "ONE", at)
	before, _ := w.walk()
	if err := os.Rename(filepath.Join(w.dir, ".new"), filepath.Join(w.dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	after, n := w.walk()
	was, now := before[len(before)-1], after[len(after)-1]
	if now.Path != was.Path || filepath.Base(now.Path) != "a.yaml" {
		t.Fatalf("last entries %s, %s: want a.yaml", was.Path, now.Path)
	}
	if n != 1 || now.Key == was.Key {
		t.Errorf("rename over a.yaml: read %d files (want 1), key changed %v", n, now.Key != was.Key)
	}
}

// A walk forgets the paths it did not reach: removed files, a removed
// directory's, and one no longer reachable.
func TestMemoForgetsRemovedPaths(t *testing.T) {
	w := newMemoWalker(t, map[string]string{"a.yaml": "one", "d/b.yaml": "two", "d/e/c.yaml": "three"})
	w.walk()
	if len(w.memo.files) != 3 {
		t.Fatalf("memo holds %d files, want 3", len(w.memo.files))
	}
	if err := os.RemoveAll(filepath.Join(w.dir, "d")); err != nil {
		t.Fatal(err)
	}
	w.walk()
	if _, ok := w.memo.files[filepath.Join(w.dir, "a.yaml")]; len(w.memo.files) != 1 || !ok {
		t.Errorf("after removing d/, memo holds %v, want a.yaml alone", w.memo.files)
	}
}

// The whole-tree limit is kept as a walk that reads every file keeps it: a
// remembered file's bytes count, so a file after it still over the limit
// is keyed as not read.
func TestMemoKeepsTreeBudget(t *testing.T) {
	w := newMemoWalker(t, map[string]string{"a.yaml": "12345", "b.yaml": "12345", "c.yaml": "12345"})
	w.lim = Limits{MaxTreeSize: 12}
	w.walk()
	if _, n := w.walk(); n != 1 {
		t.Errorf("second walk read %d files, want 1 (c.yaml, over the limit: not remembered)", n)
	}
	w.write("a.yaml", "1", time.Unix(1_700_000_000, 0)) // room for c.yaml now
	if _, n := w.walk(); n != 2 {
		t.Errorf("after a.yaml shrank, read %d files, want 2 (a.yaml, c.yaml)", n)
	}
}

// Walks through one Memo from several goroutines (a poll beside a load's
// checks) take turns and agree.
func TestMemoConcurrentWalks(t *testing.T) {
	w := newMemoWalker(t, map[string]string{"a.yaml": "one", "d/b.yaml": "two"})
	want := noMemo.Entries(Limits{}, w.dir)
	done := make(chan []Entry)
	for range 4 {
		go func() {
			var last []Entry
			for range 20 {
				last = w.memo.Entries(Limits{}, w.dir)
			}
			done <- last
		}()
	}
	for range 4 {
		if got := <-done; !slices.Equal(got, want) {
			t.Errorf("entries %v, want %v", got, want)
		}
	}
}

// The reviewer's tree: .git/ bytes a load never reads took the whole-tree
// budget, so 50-worker.yaml, which Load reads fine, was keyed by its size
// error alone and a same-size edit of it was not seen. The keyer's budgets
// are its own: the config is keyed by its bytes.
func TestMemoHiddenBytesLeaveConfigKeyed(t *testing.T) {
	w := newMemoWalker(t, map[string]string{
		".git/objects/pack": strings.Repeat("p", 90),
		"50-worker.yaml":    strings.Repeat("a", 60),
	})
	w.lim = Limits{MaxTreeSize: 100}
	if _, err := (&Loader{Limits: w.lim}).budget().readFile(osFiles{}, filepath.Join(w.dir, "50-worker.yaml")); err != nil {
		t.Fatalf("a load reads 50-worker.yaml: %v", err)
	}
	before, _ := w.walk()
	w.write("50-worker.yaml", strings.Repeat("b", 60), time.Unix(1_700_000_000, 0))
	after, _ := w.walk()
	config := filepath.Join(w.dir, "50-worker.yaml")
	if keyOf(after, config) != sha256.Sum256([]byte("file "+strings.Repeat("b", 60))) {
		t.Errorf("50-worker.yaml is not keyed by its bytes")
	}
	if keyOf(before, config) == keyOf(after, config) {
		t.Errorf("a same-size edit of 50-worker.yaml left its key as it was")
	}
}

// A file over a limit is keyed by why and by its stat: a same-size edit
// keeping its modification time still changes its key (the change time
// moves), and an untouched one keeps it.
func TestMemoKeysOverLimitByStat(t *testing.T) {
	w := newMemoWalker(t, map[string]string{"big.yaml": "0123456789", ".big": "0123456789"})
	w.lim = Limits{MaxFileSize: 5}
	at := time.Unix(1_700_000_000, 0)
	w.write("big.yaml", "0123456789", at)
	w.write(".big", "0123456789", at)
	first, _ := w.walk()
	if again, _ := w.walk(); !slices.Equal(again, first) {
		t.Fatalf("untouched files over the limit changed keys")
	}
	for _, name := range []string{"big.yaml", ".big"} {
		w.write(name, "9876543210", at)
		now, _ := w.walk()
		if p := filepath.Join(w.dir, name); keyOf(now, p) == keyOf(first, p) {
			t.Errorf("%s: a same-size same-mtime edit of a file over the limit left its key", name)
		}
	}
}

// A file swapped for a link out of the tree after the walk checked its
// path (here: as it is opened) is not read: files are opened through an
// os.Root on the tree.
func TestEntriesOpenThroughRoot(t *testing.T) {
	secret := filepath.Join(testkit.WriteTree(t, map[string]string{"token": "secret"}), "token")
	for _, tc := range []struct {
		name   string
		target func(dir string) string
	}{
		// os.Root refuses an absolute link whatever it leads to, and a
		// relative one for leaving the tree: each must be refused.
		{"absolute", func(string) string { return secret }},
		{"relative", func(dir string) string {
			rel, err := filepath.Rel(dir, secret)
			if err != nil || !strings.HasPrefix(rel, "..") {
				t.Fatalf("no relative way out of %s to %s: %q, %v", dir, secret, rel, err)
			}
			return rel
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newMemoWalker(t, map[string]string{"a.yaml": "inside"})
			a := filepath.Join(w.dir, "a.yaml")
			swapped := false
			w.memo.opening = func(name string) {
				if filepath.Base(name) != "a.yaml" || swapped {
					return
				}
				swapped = true
				if err := os.Remove(a); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(tc.target(w.dir), a); err != nil {
					t.Fatal(err)
				}
			}
			got := w.memo.Entries(w.lim, w.dir)
			if !swapped {
				t.Fatal("a.yaml was never opened")
			}
			if keyOf(got, a) == sha256.Sum256([]byte("file secret")) {
				t.Errorf("a.yaml, swapped for a link out of the tree after the check, was read through it")
			}
		})
	}
}

// keyOf is p's key in entries.
func keyOf(entries []Entry, p string) [32]byte {
	for _, e := range entries {
		if e.Path == p {
			return e.Key
		}
	}
	return [32]byte{}
}

// TestMemoAbsoluteLinkNotRecalled: a.yaml -> b.yaml, remembered, replaced by
// a.yaml -> /abs/tree/b.yaml, which stays in the tree (so passes the
// containment check) and stats as b.yaml did, but which Load refuses (an
// os.Root refuses absolute links): the walk keys it as Load fails on it,
// not by the remembered bytes.
func TestMemoAbsoluteLinkNotRecalled(t *testing.T) {
	w := newMemoWalker(t, map[string]string{"b.yaml": "bee"})
	a := filepath.Join(w.dir, "a.yaml")
	if err := os.Symlink("b.yaml", a); err != nil {
		t.Fatal(err)
	}
	w.walk()
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(w.dir, "b.yaml"), a); err != nil {
		t.Fatal(err)
	}
	got, _ := w.walk()
	if want := sha256.Sum256([]byte("err " + errAbsolute.Error())); keyOf(got, a) != want {
		t.Errorf("a.yaml, now an absolute link: key %x, want Load's error's %x", keyOf(got, a), want)
	}
}
