package fanout

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestEach(t *testing.T) {
	for _, n := range []int{0, 1, 3 * runtime.GOMAXPROCS(0)} {
		var mu sync.Mutex
		done := make([]bool, n)
		running, most := 0, 0
		Each(n, func(i int) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			running--
			done[i] = true
			mu.Unlock()
		})
		for i, d := range done {
			if !d {
				t.Fatalf("n=%d: item %d not run", n, i)
			}
		}
		if most > runtime.GOMAXPROCS(0) {
			t.Fatalf("n=%d: %d at once, more than GOMAXPROCS %d", n, most, runtime.GOMAXPROCS(0))
		}
	}
}
