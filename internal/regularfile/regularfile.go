// Package regularfile opens only regular files, never blocking on a FIFO nor reading a device, for every file mcs reads by a name someone else chose.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular marks a file that was not read because, after following
// symbolic links, it is not a regular file (a FIFO, socket or device):
// opening a FIFO blocks, and a device such as /dev/zero never ends.
var ErrNotRegular = errors.New("not a regular file")

// errTooLarge marks a file over the size ReadFile was given.
var errTooLarge = errors.New("over the size limit")

// Opener opens files: the whole file system (OS), or a tree through an
// *os.Root.
type Opener interface {
	Stat(name string) (fs.FileInfo, error)
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
}

// OS opens any path.
type OS struct{}

func (OS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

func (OS) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// Open opens p for reading only when it is, after following symbolic
// links, a regular file. The open is non-blocking and the check is
// repeated on the open descriptor, so a FIFO swapped in after the first
// check still cannot block, nor a device be read.
func Open(o Opener, p string) (*os.File, fs.FileInfo, error) {
	info, err := o.Stat(p)
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, info, fmt.Errorf("%w: %s, so never opened", ErrNotRegular, DescribeMode(info.Mode()))
	}
	return OpenChecked(o, p)
}

// OpenChecked opens p without blocking (O_NONBLOCK: a FIFO with no writer
// opens at once) and keeps it only if the descriptor is a regular file.
func OpenChecked(o Opener, p string) (*os.File, fs.FileInfo, error) {
	f, err := o.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%w: %s (swapped in as it was opened; closed unread)", ErrNotRegular, DescribeMode(info.Mode()))
		}
		return nil, info, err
	}
	return f, info, nil
}

// ReadFile reads the regular file p, at most max bytes, and returns what
// it read with the file's information (its mode for a permission check).
func ReadFile(p string, max int64) ([]byte, fs.FileInfo, error) {
	f, info, err := Open(OS{}, p)
	if err != nil {
		if errors.As(err, new(*fs.PathError)) {
			return nil, info, err // names p already
		}
		return nil, info, fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	switch {
	case err != nil:
		return nil, info, fmt.Errorf("%s: %w", p, err)
	case int64(len(b)) > max:
		return nil, info, fmt.Errorf("%s: %w: more than %d bytes", p, errTooLarge, max)
	}
	return b, info, nil
}

// DescribeMode names a file type for a message.
func DescribeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file (" + m.Type().String() + ")"
}
