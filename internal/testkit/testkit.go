// Package testkit holds the small helpers the tests of every package share that need nothing of mcs.
package testkit

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
)

// Table checks f against cases, one subtest a case named by its input, in
// the inputs' order so that a failing run reads the same each time. name is
// what the failure calls f.
func Table[In cmp.Ordered, Out comparable](t *testing.T, name string, f func(In) Out, cases map[In]Out) {
	t.Helper()
	for _, in := range slices.Sorted(maps.Keys(cases)) {
		want := cases[in]
		t.Run(fmt.Sprint(in), func(t *testing.T) {
			if msg := check(name, f, in, want); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// check is what Table reports of one case: "" when f(in) is want.
func check[In, Out comparable](name string, f func(In) Out, in In, want Out) string {
	if got := f(in); got != want {
		return fmt.Sprintf("%s(%#v) = %#v, want %#v", name, in, got, want)
	}
	return ""
}

// Every calls f(1), f(2), … in a goroutine, one call each interval, until
// the test ends or stop is called; stop returns once f has returned for the
// last time, so that nothing f touches is used after it.
func Every(tb testing.TB, interval time.Duration, f func(i int)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 1; ; i++ {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			f(i)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() { close(quit) })
		<-done
	}
	tb.Cleanup(stop)
	return stop
}
