package tree

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// racyWindow is how much older than the moment its bytes were read a
// file's modification and change times must be for its remembered key to be
// trusted: a write landing right after the read, within the same timestamp
// (1 s on some file systems, 2 s on FAT, coarser over some NFS servers),
// leaves the stat as it was. Such a "racily clean" key is read again on the
// next walk, as git does with its index.
const racyWindow = 2 * time.Second

// Memo remembers the content key of each file its walks read, by what a
// stat of the file says (device, inode, size, modification and change
// times, mode), so that the next walk through it reads only the files whose
// stat changed, as git's index does: a watcher polling an unchanged tree
// makes stat calls only. A key taken racily (see racyWindow) is not
// trusted. Each walk forgets the paths it did not reach, so a Memo holds
// one tree's worth of keys. Its zero value is ready; a nil *Memo remembers
// nothing (every file is read). Walks through one Memo take turns.
type Memo struct {
	// Now is the clock a read is timed by (nil: time.Now).
	Now func() time.Time

	mu    sync.Mutex
	files map[string]memoFile
	// opening, when set, is told each name a walk opens (tests count them).
	opening func(name string)
}

// memoFile is what a walk remembers of a file it read.
type memoFile struct {
	stat statKey
	key  [32]byte
	size int64 // bytes read, charged to the budget when not read again
}

// Entries keys each entry of the tree dir, as Digest does, walked as Load
// walks it: hidden entries too (a Butane config may embed any file beside
// it), and symbolic links followed while they stay in dir; one leading out
// of it is keyed by where it leads (as Load's error names it), neither read
// nor entered. Comparing two lists names what changed; Sum is one key.
//
// Files are opened through an *os.Root on dir by names relative to it, as
// Load opens them, so a link swapped in after the check is not read either.
// The budgets are the walk's own (see keyer): a file a load would read is
// keyed by its bytes whenever the load could read it; a file over a limit
// is keyed by why and by its stat, so a write to it still changes its key.
func (m *Memo) Entries(lim Limits, dir string) []Entry {
	k := m.keyer(lim)
	defer k.done()
	k.tree = dir
	k.realTree, k.realErr = filepath.EvalSymlinks(dir)
	if root, err := os.OpenRoot(dir); err == nil {
		defer root.Close()
		k.inTree(dir, root)
		k.hook(m)
	}
	k.walk(dir)
	return k.out
}

// Digest is a content key of paths and, for a directory, of everything
// under it (walked as Load walks a tree, but following symbolic links
// wherever they lead, as a Secret volume's files do): each path with its
// bytes, or with why they were not read (absent, not a regular file, over
// lim), so an edit that keeps a file's size and modification time still
// changes it. Files are read as a load reads them, through one budget of
// lim, so computing the key can neither block on a FIFO nor read more than
// a load would.
func (m *Memo) Digest(lim Limits, paths ...string) [32]byte {
	k := m.keyer(lim)
	defer k.done()
	for _, p := range paths {
		k.walk(p)
	}
	return Sum(k.out)
}

// keyer starts a walk through m, which holds m until done.
func (m *Memo) keyer(lim Limits) *keyer {
	k := &keyer{budget: budget{Limits: lim}, others: budget{Limits: lim}, open: osFiles{}, now: time.Now}
	k.name = func(p string) string { return p }
	k.hook(m)
	if m == nil {
		return k
	}
	m.mu.Lock()
	k.memo, k.kept = m, map[string]memoFile{}
	if m.Now != nil {
		k.now = m.Now
	}
	return k
}

// hook has k's opens told to m.opening, when set.
func (k *keyer) hook(m *Memo) {
	if m != nil && m.opening != nil {
		k.open = toldOpener{k.open, m.opening}
	}
}

// toldOpener is an opener telling each name it opens.
type toldOpener struct {
	opener
	tell func(name string)
}

func (t toldOpener) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	t.tell(name)
	return t.opener.OpenFile(name, flag, perm)
}

// done ends the walk: its memo keeps what this walk read or found unchanged
// (so forgets the paths it did not reach) and is free for the next.
func (k *keyer) done() {
	if k.memo != nil {
		k.memo.files = k.kept
		k.memo.mu.Unlock()
	}
}

// recall is p's remembered key when info, the walk's stat of it, is what it
// was when the key was taken, and b, p's budget, still has room for its
// bytes (as a read would have): those are charged as if read.
func (k *keyer) recall(b *budget, p string, info fs.FileInfo) ([32]byte, bool) {
	if k.memo == nil {
		return [32]byte{}, false
	}
	was, ok := k.memo.files[p]
	now, known := statOf(info)
	if !ok || !known || now != was.stat || was.size > b.next() {
		return [32]byte{}, false
	}
	k.kept[p] = was
	b.read += was.size
	return was.key, true
}

// remember keeps p's key, read as info (the open file's stat) says it was,
// unless it was taken racily or the stat cannot say (then p is read again
// next time).
func (k *keyer) remember(p string, info fs.FileInfo, size int64, key [32]byte) {
	st, known := statOf(info)
	if k.memo == nil || !known || size != info.Size() {
		return
	}
	if k.now().Sub(st.latest()) < racyWindow {
		return
	}
	k.kept[p] = memoFile{stat: st, key: key, size: size}
}
