package fanout

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
)

// Every item runs, and exactly GOMAXPROCS at once when there are more:
// each item blocks until every goroutine in the bubble is blocked, so the
// count at that moment is how many Each lets run.
func TestEach(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, n := range []int{0, 1, procs, 3 * procs} {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			done := make([]bool, n)
			running, most := 0, 0
			release := make(chan struct{})
			go func() {
				synctest.Wait()
				close(release)
			}()
			Each(n, func(i int) {
				mu.Lock()
				running++
				most = max(most, running)
				mu.Unlock()
				<-release
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
			if want := min(n, procs); most != want {
				t.Fatalf("n=%d: %d at once, want %d (GOMAXPROCS %d)", n, most, want, procs)
			}
		})
	}
}
