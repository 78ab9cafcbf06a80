package tree

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/ignition-mcs/mcs/internal/regularfile"
)

// Default limits: realistic MachineConfigs are well under 1 MiB (the largest
// in the real data we test against is about 150 KB), and the rendered config
// upstream accepts is 1.5 MiB, so 16 MiB a file leaves room to spare while a
// stray disk image or log cannot take the server's memory.
const (
	DefaultMaxFileSize int64 = 16 << 20
	DefaultMaxTreeSize int64 = 256 << 20
)

// Limits bound what one load reads from files. Zero fields take the defaults.
type Limits struct {
	MaxFileSize int64 // bytes read from any one file
	MaxTreeSize int64 // bytes read from all files of one load together
	// FileSetting and TreeSetting say how a person raises each limit
	// ("--max-file-size"); named in the error when set.
	FileSetting, TreeSetting string
}

// named wraps a limit error with how the limit is set.
func (lim Limits) named(se *sizeError) {
	se.Setting = lim.FileSetting
	if se.Tree {
		se.Setting = lim.TreeSetting
	}
}

func (lim Limits) file() int64 { return orDefault(lim.MaxFileSize, DefaultMaxFileSize) }
func (lim Limits) tree() int64 { return orDefault(lim.MaxTreeSize, DefaultMaxTreeSize) }

func orDefault(v, def int64) int64 {
	if v <= 0 {
		return def
	}
	return v
}

var (
	// errNotRegular marks a file that was not read because, after following
	// symbolic links, it is not a regular file: regularfile's.
	errNotRegular = regularfile.ErrNotRegular
	// errTooLarge marks a file, or a tree, over its size limit.
	errTooLarge = errors.New("over the size limit")
	// errSymlinkLoop marks a directory reached again through a symbolic
	// link to one of its own ancestors.
	errSymlinkLoop = errors.New("directory symlink loop")
)

// walkTree visits root and, when it is a directory, everything under it in
// lexical order, as Load reads a tree: symbolic links are followed, so info
// (nil when err is set) describes what a link points to. A directory is
// visited before its contents; returning fs.SkipDir skips them, any other
// error stops the walk. A directory that resolves to one of its own
// ancestors is visited with an error wrapping errSymlinkLoop and not entered;
// one reached a second time by another link is not visited again. Nothing is
// opened but directories, so no file in the tree can block the walk.
func walkTree(root string, visit func(p string, info fs.FileInfo, err error) error) error {
	info, err := os.Stat(root)
	if err != nil {
		return visit(root, nil, err)
	}
	w := treeWalk{visit: visit, seen: map[string]bool{}}
	err = w.walk(root, info)
	if errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

type treeWalk struct {
	visit     func(string, fs.FileInfo, error) error
	seen      map[string]bool
	ancestors []string // real paths of the directories being walked
}

func (w *treeWalk) walk(p string, info fs.FileInfo) error {
	if !info.IsDir() {
		return w.visit(p, info, nil)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return w.visit(p, nil, err)
	}
	if slices.Contains(w.ancestors, real) {
		return w.visit(p, nil, fmt.Errorf("%w: resolves to %s, which contains it", errSymlinkLoop, real))
	}
	if w.seen[real] {
		return nil
	}
	if err := w.visit(p, info, nil); err != nil {
		return err // fs.SkipDir leaves it unseen: another link may still enter it
	}
	w.seen[real] = true
	ents, err := os.ReadDir(p)
	if err != nil {
		return w.visit(p, nil, err)
	}
	w.ancestors = append(w.ancestors, real)
	defer func() { w.ancestors = w.ancestors[:len(w.ancestors)-1] }()
	for _, e := range ents {
		c := filepath.Join(p, e.Name())
		ci, err := os.Stat(c) // follows symlinks; never opens
		if err != nil {
			err = w.visit(c, nil, err)
		} else {
			err = w.walk(c, ci)
		}
		if err != nil && !errors.Is(err, fs.SkipDir) {
			return err
		}
	}
	return nil
}

// describeMode names a file type for a message.
func describeMode(m fs.FileMode) string { return regularfile.DescribeMode(m) }

// opener opens files: the whole file system (osFiles), or a tree through
// an *os.Root, which refuses a path that leaves it, even through a link
// swapped in after the check that named it (see outside).
type opener = regularfile.Opener

// osFiles opens any path.
type osFiles = regularfile.OS

// openRegular opens p for reading only when it is, after following symbolic
// links, a regular file, never blocking (regularfile.Open).
func openRegular(o opener, p string) (*os.File, fs.FileInfo, error) { return regularfile.Open(o, p) }

// openChecked opens p without blocking and keeps it only if the descriptor
// is a regular file (regularfile.OpenChecked).
func openChecked(o opener, p string) (*os.File, fs.FileInfo, error) {
	return regularfile.OpenChecked(o, p)
}

// sizeError is a file over the per-file limit, or one that would take the
// bytes read by a load over the whole-tree limit.
type sizeError struct {
	Size   int64 // the file's size; when Grew, the bytes read before stopping
	Limit  int64 // the limit it is over
	Before int64 // for the whole-tree limit: the bytes read from other files first
	Tree   bool  // the whole-tree limit, not the per-file one
	Grew   bool  // the file grew past the limit while it was read
	// Setting is how the limit is set, for the message; may be empty.
	Setting string
}

func (e *sizeError) Error() string {
	size := fmt.Sprintf("file is %d bytes", e.Size)
	if e.Grew {
		size = fmt.Sprintf("file grew while it was read: stopped after %d bytes", e.Size)
	}
	set := ""
	if e.Setting != "" {
		set = " (" + e.Setting + ")"
	}
	if e.Tree {
		return fmt.Sprintf("%s; with the %d bytes read from other files first, over the whole-tree limit of %d bytes%s; it and the files after it were not read", size, e.Before, e.Limit, set)
	}
	return fmt.Sprintf("%s, over the per-file limit of %d bytes%s", size, e.Limit, set)
}

func (e *sizeError) Unwrap() error { return errTooLarge }

// readAtMost reads f whole, or fails without reading more than limit+1
// bytes: its size when opened is only a hint, as a file can grow (or, in
// /proc, claim size 0) while it is read.
func readAtMost(f *os.File, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, &sizeError{Size: size, Limit: limit}
	}
	r := io.LimitReader(f, limit+1)
	buf := make([]byte, 0, size+1) // +1: an unchanged file is read to EOF without growing buf
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grows by the runtime's policy, as os.ReadFile does
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &sizeError{Size: int64(len(buf)), Limit: limit, Grew: true}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// budget is what one load may still read from files: its Limits, less the
// bytes read so far.
type budget struct {
	Limits
	read int64 // bytes read from files so far
	full bool  // the whole-tree limit was reached: read no more
}

// next is the most the next file may hold: the per-file limit, or what the
// whole-tree limit has left when that is less.
func (b *budget) next() int64 { return min(b.file(), b.tree()-b.read) }

// over completes se, a file over next(): when the whole-tree limit is the
// one it broke, with that limit and the bytes read before; either way with
// how the limit is set. It reports whether the tree's limit was broken.
func (b *budget) over(se *sizeError) bool {
	tree := b.tree()-b.read < b.file()
	if tree {
		se.Limit, se.Before, se.Tree = b.tree(), b.read, true
	}
	b.named(se)
	return tree
}

// readFile reads a regular file, p as o names it, within the budget.
func (b *budget) readFile(o opener, p string) ([]byte, error) {
	data, _, err := b.readFileInfo(o, p)
	return data, err
}

// readFileInfo is readFile, with the stat of the file it opened (taken
// before its bytes were read).
func (b *budget) readFileInfo(o opener, p string) ([]byte, fs.FileInfo, error) {
	f, info, err := openRegular(o, p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, err := readAtMost(f, info.Size(), b.next())
	var se *sizeError
	if errors.As(err, &se) && b.over(se) {
		b.full = true
	}
	b.read += int64(len(data))
	return data, info, err
}
