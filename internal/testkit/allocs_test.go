package testkit

import (
	"sync"
	"testing"
)

var sink []byte

func TestAllocs(t *testing.T) {
	if n := Allocs(100, func() { sink = make([]byte, 64) }); n != 1 {
		t.Errorf("an f that allocates once: %v allocations, want 1", n)
	}
	buf := make([]byte, 64)
	// Another goroutine allocating during only the first try is noise the
	// least of three leaves out.
	var noisy sync.WaitGroup
	calls := 0
	if n := Allocs(100, func() {
		// Call 1 is AllocsPerRun's warm-up; call 2 is measured.
		if calls++; calls == 2 {
			noisy.Go(func() {
				for range 1000 {
					sink = make([]byte, 64)
				}
			})
			noisy.Wait()
		}
		buf[0]++
	}); n != 0 {
		t.Errorf("an f that allocates nothing, beside another goroutine's allocations: %v allocations, want 0", n)
	}
}
