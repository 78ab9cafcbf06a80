//go:build !linux

package tree

import (
	"io/fs"
	"time"
)

// statKey is empty where the stat's change time and inode are not read:
// every file is read on every walk.
type statKey struct{}

func statOf(fs.FileInfo) (statKey, bool) { return statKey{}, false }

func (statKey) latest() time.Time { return time.Time{} }
