package pipeline

import (
	"runtime/debug"

	"github.com/ignition-mcs/mcs/render"
)

// carry returns the pool prev serves for res, to be served again as it is,
// or nil when it must be encoded: prev has no such pool, or its result's
// key or its node files' key differs. A result without a key (made by
// hand) is never carried.
func (prev *Snapshot) carry(res *render.Result, node render.Key) *Pool {
	if prev == nil || res.Key == (render.Key{}) {
		return nil
	}
	if p := prev.pools[res.Pool]; p != nil && p.result.Key == res.Key && p.node == node {
		return p
	}
	return nil
}

// swapAndFill swaps snap in with swap, then encodes, off the reload, the
// specs of its pools that were not encoded before it was served (see
// lazy.go). When most of it was built anew, it returns to the OS the memory
// the build left behind, and again after the fill: encoding translates and
// validates each pool's config at every version, many times what the
// snapshot keeps, and the runtime would return it only gradually, so a
// server that re-rendered many pools would sit at several times the memory
// it serves. The first release runs before the swap, so that a server is
// ready with its memory settled. A build that carried most pools made
// little garbage, and a forced collection would delay its new bytes. The
// fill stops once current no longer returns snap.
func swapAndFill(snap *Snapshot, swap func(*Snapshot), current func() *Snapshot) {
	big := snap.Rerendered > snap.Carried
	if big {
		debug.FreeOSMemory()
	}
	swap(snap)
	if snap.Rerendered == 0 {
		return
	}
	go func() {
		snap.fillWhile(func() bool { return current() == snap })
		if big {
			debug.FreeOSMemory()
		}
	}()
}
