// Package gctune keeps the garbage collector's target in step with the live heap: a percentage of a large heap, a floor of bytes above a small one.
package gctune

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Policy is a GC target for a live heap: it may grow by Base percent of
// it, or by Headroom bytes, whichever is more (capped at 1000%).
type Policy struct {
	Base     int
	Headroom uint64
}

// Server is mcs's serving policy. Its live heap is mostly the served
// snapshot, long-lived, and requests make little garbage, so Go's default
// (100: collect when the heap has doubled) mostly lets RSS reach twice what
// is served: at 102 pools under load RSS was 189 MB at 100, 151 MB at 50,
// with no fewer requests a second (docs/performance.md). 50 % still let
// RSS sit at 164–176 MB for the seconds a 102-pool server encodes its
// other specs after it is ready (the fill: a heap of ~80 MB live and
// garbage up to its target), 30 % at 147–152 (issue 46); the cost is a
// collection of that heap every ~24 MB allocated instead of ~40. Thirty
// percent of a small live heap (a few MB at 2 pools) is a collection
// every few hundred requests, each marking the whole heap and the
// binary's globals, ~4 µs of CPU a request where a bare server spends
// ~0.4: hence the 8 MiB floor.
var Server = Policy{Base: 30, Headroom: 8 << 20}

// Controller is mcs controller's: its heap is mostly garbage (every render,
// and the JSON of every rendered config it writes, is dropped once
// written), which 50 collected twice as often, a third more CPU for its
// renders (render BenchmarkWorkerEdit, docs/performance.md).
var Controller = Policy{Base: 100, Headroom: 8 << 20}

// percent is the GC target for live bytes (0: nothing measured yet).
func (p Policy) percent(live uint64) int {
	if live == 0 {
		return p.Base
	}
	return max(p.Base, int(min(p.Headroom*100/live, 1000)))
}

// Runtime is what Run reads and sets: the process's (Process) or a
// test's.
type Runtime interface {
	// Sample returns the GC cycles completed and the heap the last one
	// left live, in bytes.
	Sample() (cycles, live uint64)
	SetGCPercent(percent int)
}

// Run sets the target for the heap each collection leaves live, looking
// every interval, until ctx ends; the target starts at p.Base.
func Run(ctx context.Context, p Policy, every time.Duration, rt Runtime) {
	current := p.Base
	rt.SetGCPercent(current)
	var seen uint64
	wait.UntilWithContext(ctx, func(context.Context) {
		cycles, live := rt.Sample()
		if cycles == seen {
			return
		}
		seen = cycles
		if want := p.percent(live); want != current {
			rt.SetGCPercent(want)
			current = want
		}
	}, every)
}

// Process is this process's runtime (runtime/metrics, debug.SetGCPercent).
func Process() Runtime { return process{} }

type process struct{}

func (process) Sample() (cycles, live uint64) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	for i, v := range []*uint64{&cycles, &live} {
		if s[i].Value.Kind() == metrics.KindUint64 {
			*v = s[i].Value.Uint64()
		}
	}
	return cycles, live
}

func (process) SetGCPercent(p int) { debug.SetGCPercent(p) }
