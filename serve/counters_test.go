package serve

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// Goroutines asking for the same keys at once get one counter per key,
// made once, and a hit allocates nothing.
func TestMemo(t *testing.T) {
	var m memo[bytesKey]
	var made atomic.Int64
	mk := func() prometheus.Counter {
		made.Add(1)
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	}
	got := make([][]prometheus.Counter, 8)
	var wg sync.WaitGroup
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				got[g] = append(got[g], m.get(bytesKey{fmt.Sprint("pool-", i), "3.4.0"}, mk))
			}
		}()
	}
	wg.Wait()
	if made.Load() != 50 {
		t.Errorf("%d counters made for 50 keys", made.Load())
	}
	for g := range got {
		for i := range got[g] {
			if got[g][i] != got[0][i] {
				t.Fatalf("goroutine %d got another counter for key %d", g, i)
			}
		}
	}
	k := bytesKey{"pool-7", "3.4.0"}
	if n := testkit.Allocs(100, func() { m.get(k, mk) }); n != 0 {
		t.Errorf("a hit allocates %v times", n)
	}
}
