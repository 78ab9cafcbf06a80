// Package fanout runs independent work items side by side, never more at once than there are processors to run them.
package fanout

import (
	"runtime"

	"golang.org/x/sync/errgroup"
)

// Each runs f(0), …, f(n-1), at most GOMAXPROCS at a time, and returns once
// all have. Renders and encodings are CPU-bound: more goroutines would only
// hold more memory at once.
func Each(n int, f func(i int)) {
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range n {
		g.Go(func() error {
			f(i)
			return nil
		})
	}
	_ = g.Wait() // f returns no error
}
