package tree

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"strconv"
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

	open opener           // how files are opened
	now  func() time.Time // when a read ends, to tell a racy key
	// memo, when set, is the Memo this walk holds; kept is what it will
	// remember after this walk.
	memo *Memo
	kept map[string]memoFile
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
		if key, ok := k.recall(p, info); ok {
			return key
		}
		data, read, err := k.readFileInfo(k.open, p)
		if err != nil {
			fmt.Fprintf(h, "unread %v", err)
			break
		}
		h.Write([]byte("file "))
		h.Write(data)
		key := [32]byte(h.Sum(nil))
		k.remember(p, read, int64(len(data)), key)
		return key
	}
	return [32]byte(h.Sum(nil))
}
