// Package fanout runs independent work items side by side, never more at once than there are processors to run them.
package fanout

import (
	"runtime"
	"sync"
)

// Each runs f(0), …, f(n-1), at most GOMAXPROCS at a time, and returns once
// all have. Renders and encodings are CPU-bound: more goroutines would only
// hold more memory at once.
func Each(n int, f func(i int)) {
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}
