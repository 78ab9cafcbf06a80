package tree

import (
	"io/fs"
	"syscall"
	"testing"
	"time"
)

// statInfo is a FileInfo whose Sys is st (or, when st is nil, nothing a
// stat key can be read from).
type statInfo struct {
	fs.FileInfo
	st *syscall.Stat_t
}

func (s statInfo) Size() int64 {
	if s.st == nil {
		return 3
	}
	return s.st.Size
}

func (s statInfo) Sys() any {
	if s.st == nil {
		return nil
	}
	return s.st
}

// A remembered key is used only while every field of the stat is as it
// was: a file renamed over another (same size and times, another inode) or
// one whose change time alone moved is read again; a stat without the
// fields is never trusted.
func TestMemoStatKey(t *testing.T) {
	was := syscall.Stat_t{Dev: 1, Ino: 2, Size: 3, Mode: 0o100644,
		Mtim: syscall.Timespec{Sec: 1_700_000_000}, Ctim: syscall.Timespec{Sec: 1_700_000_000}}
	for _, c := range []struct {
		name   string
		change func(*syscall.Stat_t)
		sys    bool
		hit    bool
	}{
		{"unchanged", func(*syscall.Stat_t) {}, true, true},
		{"device", func(s *syscall.Stat_t) { s.Dev++ }, true, false},
		{"inode (renamed over)", func(s *syscall.Stat_t) { s.Ino++ }, true, false},
		{"size", func(s *syscall.Stat_t) { s.Size++ }, true, false},
		{"modification time", func(s *syscall.Stat_t) { s.Mtim.Nsec++ }, true, false},
		{"change time", func(s *syscall.Stat_t) { s.Ctim.Nsec++ }, true, false},
		{"mode", func(s *syscall.Stat_t) { s.Mode |= 0o002 }, true, false},
		{"no stat fields", func(*syscall.Stat_t) {}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &Memo{Now: func() time.Time { return time.Unix(1_800_000_000, 0) }}
			first, now := was, was
			c.change(&now)
			info := func(st *syscall.Stat_t) fs.FileInfo {
				if !c.sys {
					st = nil
				}
				return statInfo{st: st}
			}
			k := m.keyer(Limits{})
			k.remember("f", info(&first), 3, [32]byte{7})
			k.done()
			k = m.keyer(Limits{})
			defer k.done()
			key, hit := k.recall(&k.budget, "f", info(&now))
			if hit != c.hit || (hit && key != [32]byte{7}) {
				t.Errorf("recalled %v (key %x), want %v", hit, key[:1], c.hit)
			}
		})
	}
}
