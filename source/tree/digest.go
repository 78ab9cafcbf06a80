package tree

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
)

// Entry is a path and its content key: the SHA-256 of its bytes, or of why
// they were not read (absent, a directory, not a regular file, over the
// limits, outside the tree), each kind tagged so that none shares another's
// key.
type Entry struct {
	Path string
	Key  [32]byte
}

// Digest is a content key of paths and, for a directory, of everything
// under it (walked as Load walks a tree, but following symbolic links
// wherever they lead, as a Secret volume's files do): each path with its
// bytes, or with why they were not read (absent, not a regular file, over
// lim), so an edit that keeps a file's size and modification time still
// changes it. Files are read as a load reads them, through one budget of
// lim, so computing the key can neither block on a FIFO nor read more than
// a load would.
func Digest(lim Limits, paths ...string) [32]byte {
	k := keyer{budget: budget{Limits: lim}}
	for _, p := range paths {
		k.walk(p)
	}
	return Sum(k.out)
}

// Entries keys each entry of the tree dir, as Digest does, walked as Load
// walks it: hidden entries too (a Butane config may embed any file beside
// it), and symbolic links followed while they stay in dir; one leading out
// of it is keyed by where it leads (as Load's error names it), neither read
// nor entered. Comparing two lists names what changed; Sum is one key.
func Entries(lim Limits, dir string) []Entry {
	k := keyer{budget: budget{Limits: lim}, tree: dir}
	k.realTree, k.realErr = filepath.EvalSymlinks(dir)
	k.walk(dir)
	return k.out
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

// keyer keys the entries of the trees it walks, reading files within one
// budget.
type keyer struct {
	budget
	tree string // when set, a link leading out of it is not followed
	// realTree is tree, every link followed, once for the whole walk;
	// realErr is why it could not be (outside then passes every path).
	realTree string
	realErr  error
	out      []Entry
}

func (k *keyer) walk(root string) {
	walkTree(root, func(p string, info fs.FileInfo, err error) error {
		var skip error
		if err == nil && k.tree != "" && k.realErr == nil {
			if err = outsideReal(k.tree, k.realTree, p); err != nil {
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
		data, err := k.readFile(osFiles{}, p)
		if err != nil {
			fmt.Fprintf(h, "unread %v", err)
			break
		}
		h.Write([]byte("file "))
		h.Write(data)
	}
	return [32]byte(h.Sum(nil))
}
