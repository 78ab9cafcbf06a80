package tree

import (
	"io/fs"
	"syscall"
	"time"
)

// statKey is what a stat says of a file that a rewrite changes: an edit
// moves the change time whatever it does to the modification time, and a
// file renamed over another changes the inode.
type statKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
	mode         uint32
}

// statOf is info's statKey; false when info does not carry the fields
// (then the file is read every time).
func statOf(info fs.FileInfo) (statKey, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return statKey{}, false
	}
	return statKey{
		dev: uint64(st.Dev), ino: uint64(st.Ino), size: int64(st.Size), mode: uint32(st.Mode),
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}, true
}

// latest is the later of the modification and change times.
func (s statKey) latest() time.Time { return time.Unix(0, max(s.mtime, s.ctime)) }
