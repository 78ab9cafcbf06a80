package gctune

import (
	"context"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// The target is Base percent of a large heap, Headroom above a small one
// (capped), Base before anything is measured.
func TestPercent(t *testing.T) {
	testkit.Table(t, "percent", Server.percent, map[uint64]int{
		0:                          30,   // nothing measured yet
		100 << 10:                  1000, // a tiny heap: capped
		6 << 20:                    133,  // 2 pools
		Server.Headroom * 100 / 30: 30,   // the crossover
		Server.Headroom * 100 / 40: 40,   // below it, the floor
		80 << 20:                   30,   // 102 pools
	})
}

// fakeRuntime is a heap a test sets, and the targets Run set.
type fakeRuntime struct {
	mu           sync.Mutex
	cycles, live uint64
	set          []int
}

func (f *fakeRuntime) Sample() (uint64, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cycles, f.live
}

func (f *fakeRuntime) SetGCPercent(p int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = append(f.set, p)
}

func (f *fakeRuntime) collect(live uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cycles++
	f.live = live
}

func (f *fakeRuntime) targets() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.set...)
}

// The target starts at the base, follows the heap each collection leaves,
// is set only when it changes, and not between collections.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := &fakeRuntime{}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); Run(ctx, Server, time.Second, rt) }()
		testkit.Advance(time.Second)
		rt.collect(6 << 20) // 2 pools
		testkit.Advance(time.Second)
		rt.collect(6 << 20) // the same heap: no change
		testkit.Advance(time.Second)
		rt.mu.Lock()
		rt.live = 80 << 20 // no collection yet: not read
		rt.mu.Unlock()
		testkit.Advance(time.Second)
		rt.collect(80 << 20)
		testkit.Advance(time.Second)
		cancel()
		<-done
		if got, want := rt.targets(), []int{30, 133, 30}; !slices.Equal(got, want) {
			t.Errorf("targets set %v, want %v", got, want)
		}
	})
}

// The process's runtime reads real collections and sets the real target.
func TestProcess(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	rt := Process()
	c0, _ := rt.Sample()
	runtime.GC()
	c1, live := rt.Sample()
	if c1 <= c0 || live == 0 {
		t.Errorf("after a collection: cycles %d -> %d, live %d", c0, c1, live)
	}
	rt.SetGCPercent(77)
	if got := debug.SetGCPercent(100); got != 77 {
		t.Errorf("GOGC %d, want 77", got)
	}
}
