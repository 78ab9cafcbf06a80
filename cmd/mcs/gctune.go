package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// gcPercent is the GC target unless GOGC is set: mcs's live heap is mostly
// the served snapshot, long-lived, and requests make little garbage, so
// Go's default (100: collect when the heap has doubled) mostly lets RSS
// reach twice what is served. Measured at 102 pools under load: RSS 189 MB
// with 100, 151 MB with 50, and no fewer requests per second
// (docs/performance.md).
const gcPercent = 50

// gcHeadroom is the least the heap may grow between collections. Half of a
// small live heap (a few MB at 2 pools) is a collection every few hundred
// requests, each marking the whole heap and the binary's globals: at 2
// pools the collector was ~4 µs of CPU a request where a bare server spends
// ~0.4 (perf, docs/performance.md). Above 16 MiB live, half is more.
const gcHeadroom = 8 << 20

// controllerGCPercent is mcs controller's target in place of gcPercent: its
// heap is mostly garbage (every render, and the JSON of every rendered
// config it writes, is dropped once written), which gcPercent collected
// twice as often: a third more CPU for its renders (render
// BenchmarkWorkerEdit, docs/performance.md).
const controllerGCPercent = 100

// gcBaseFor is the GC target of the command args run: controllerGCPercent
// for mcs controller, gcPercent for the rest.
func gcBaseFor(args []string) int {
	if len(args) > 0 && args[0] == "controller" {
		return controllerGCPercent
	}
	return gcPercent
}

// gcPercentFor is the GC target for a live heap of live bytes: it may grow
// by base percent of it, or by gcHeadroom, whichever is more.
func gcPercentFor(live uint64, base int) int {
	if live == 0 {
		return base
	}
	return max(base, int(min(gcHeadroom*100/live, 1000)))
}

// tuneGC sets the GC target after each collection from the heap it left
// live (runtime/metrics), so that the target follows the served snapshot
// as pools come and go: gcHeadroom above a small heap, base percent of a
// large one. It runs on the finalizer goroutine, once per collection,
// until stop is called (tests; mcs keeps it for its life).
func tuneGC(base int) (stop func()) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := base
	var stopped atomic.Bool
	var after func(*gcCycle)
	after = func(*gcCycle) {
		if stopped.Load() {
			return
		}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 {
			if p := gcPercentFor(s[0].Value.Uint64(), base); p != current {
				debug.SetGCPercent(p)
				current = p
			}
		}
		runtime.SetFinalizer(new(gcCycle), after)
	}
	debug.SetGCPercent(current)
	runtime.SetFinalizer(new(gcCycle), after)
	return func() { stopped.Store(true) }
}

// gcCycle is garbage whose finalizer runs after the collection that found
// it: one is made per cycle. Not zero-sized, which could share an address.
type gcCycle struct{ _ *int }
