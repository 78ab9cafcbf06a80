package tree

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Entry is a path and its content key: the SHA-256 of its bytes, or of why
// they were not read (absent, a directory, not a regular file, over the
// limits, outside the tree), each kind tagged so that none shares another's
// key.
type Entry struct {
	Path string
	Key  [32]byte
}

// Sum is one key of entries: their paths and keys, in order.
func Sum(entries []Entry) [32]byte {
	h := sha256.New()
	for _, e := range entries {
		h.Write([]byte(strconv.Quote(e.Path)))
		h.Write(e.Key[:])
	}
	return [32]byte(h.Sum(nil))
}

// keyer keys the entries of the trees it walks. It reads within budgets of
// its own, not the load's: in a tree, the files a load reads (see
// loadReads) are charged to budget, as the load charges them, and every
// other file (.git/, a Butane config's local files) to others, so bytes a
// load never reads cannot use up the room its config files are keyed in.
type keyer struct {
	budget
	others budget
	tree   string // when set, a link leading out of it is not followed
	// realTree is tree, every link followed, once for the whole walk;
	// realErr is why it could not be (outside then passes every path).
	realTree string
	realErr  error
	out      []Entry

	// open opens files by the names name gives them: an *os.Root on tree
	// with names relative to it (so that a link swapped in after the
	// containment check still cannot lead out), or the file system.
	open opener
	name func(p string) string
	now  func() time.Time // when a read ends, to tell a racy key
	// memo, when set, is the Memo this walk holds; kept is what it will
	// remember after this walk.
	memo *Memo
	kept map[string]memoFile
}

// inTree opens the files of tree through root, by names relative to tree.
func (k *keyer) inTree(tree string, root *os.Root) {
	k.open = root
	k.name = func(p string) string {
		rel, err := filepath.Rel(tree, p)
		if err != nil {
			return p // not under tree: root refuses it
		}
		return rel
	}
}

// loadReads says whether a load of the tree reads p itself: a file with an
// extension Load reads, no part of its path under the tree hidden (as
// Load's walk skips hidden entries). Outside a tree every file named is.
func (k *keyer) loadReads(p string) bool {
	if k.tree == "" {
		return true
	}
	rel, err := filepath.Rel(k.tree, p)
	if rel == "." {
		return true // the tree is a file, named: Load reads it whatever its name
	}
	if err != nil || !readExts[strings.ToLower(filepath.Ext(p))] {
		return false
	}
	return !strings.HasPrefix(rel, ".") && !strings.Contains(rel, string(filepath.Separator)+".")
}

// budgetFor is the budget p's bytes are charged to.
func (k *keyer) budgetFor(p string) *budget {
	if k.loadReads(p) {
		return &k.budget
	}
	return &k.others
}

func (k *keyer) walk(root string) {
	walkTree(root, func(p string, info fs.FileInfo, err error) error {
		var skip error
		if err == nil && k.tree != "" && k.realErr == nil {
			if err = outsideReal(k.tree, k.realTree, p, true); err != nil {
				skip = fs.SkipDir // a directory is not entered; for a file, as nil
			}
		}
		k.out = append(k.out, Entry{Path: p, Key: k.key(p, info, err)})
		return skip
	})
}

// key is p's content key; info and err are what walkTree found there.
func (k *keyer) key(p string, info fs.FileInfo, err error) [32]byte {
	h := sha256.New()
	switch {
	case err != nil:
		fmt.Fprintf(h, "err %v", err)
	case info.IsDir():
		h.Write([]byte("dir"))
	default:
		b := k.budgetFor(p)
		if key, ok := k.recall(b, p, info); ok {
			return key
		}
		h.Write([]byte("file "))
		n, read, err := b.hashFile(k.open, k.name(p), h)
		if err != nil {
			return unreadKey(read, err)
		}
		key := [32]byte(h.Sum(nil))
		k.remember(p, read, n, key)
		return key
	}
	return [32]byte(h.Sum(nil))
}

// unreadKey keys a file not read, by why; one not read for a limit also by
// its stat (see statKey: the change time moves with any write), so that an
// edit keeping its size is still seen.
func unreadKey(info fs.FileInfo, err error) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "unread %v", err)
	if info != nil && errors.Is(err, errTooLarge) {
		if st, ok := statOf(info); ok {
			fmt.Fprintf(h, " stat %+v", st)
		}
	}
	return [32]byte(h.Sum(nil))
}

// hashFile writes a regular file's bytes, name as o opens it, into w within
// the budget, streaming them (never more than next()+1 bytes read); it
// returns how many there were and the stat of the file opened (taken before
// the read; set too when a limit stopped it).
func (b *budget) hashFile(o opener, name string, w io.Writer) (int64, fs.FileInfo, error) {
	f, info, err := openRegular(o, name)
	if err != nil {
		return 0, info, err
	}
	defer f.Close()
	limit := b.next()
	var se *sizeError
	n, err := int64(0), error(nil)
	if info.Size() > limit {
		se = &sizeError{Size: info.Size(), Limit: limit}
	} else if n, err = io.Copy(w, io.LimitReader(f, limit+1)); n > limit {
		se = &sizeError{Size: n, Limit: limit, Grew: true}
	}
	if se != nil {
		b.full = b.over(se) || b.full
		return 0, info, se
	}
	if err != nil {
		return 0, info, err
	}
	b.read += n
	return n, info, nil
}
