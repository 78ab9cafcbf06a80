package admit

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/ignition-mcs/mcs/netlimit"
)

// outcomeBusy is a review refused for want of a slot (metrics, /status).
const outcomeBusy = "busy"

// gate bounds the reviews under way, body read included, shared fairly
// between client addresses (netlimit.Slots): a review holds its body (up
// to MaxBody) and a core, so their number is what bounds the webhook's
// memory and CPU, whatever clients send. One past the bound waits a
// moment for a slot (the API server's reviews come in bursts at a pool
// sync), then is refused at once: the API server then applies the
// webhook's failurePolicy (Ignore: stored as written).
type gate struct {
	slots *netlimit.Slots
	wait  time.Duration

	mu    sync.Mutex
	freed chan struct{} // closed, and replaced, at each release
}

func newGate(max int, wait time.Duration) *gate {
	return &gate{slots: netlimit.NewSlots(max), wait: wait, freed: make(chan struct{})}
}

// busyError is a review refused for want of a slot.
type busyError struct {
	share int  // the slots the address may hold
	full  bool // every slot was taken
}

func (e *busyError) Error() string {
	if e.full {
		return "busy: every review slot is taken"
	}
	return fmt.Sprintf("busy: this address holds its share of review slots (%d)", e.share)
}

// enter takes a slot for addr, waiting up to g.wait for one while ctx
// lasts; release gives it back.
func (g *gate) enter(ctx context.Context, addr netip.Addr) (release func(), err error) {
	var timer *time.Timer
	for {
		// The channel is read before Take: a release between the two
		// closes the one waited on.
		g.mu.Lock()
		freed := g.freed
		g.mu.Unlock()
		ok, share, full := g.slots.Take(addr)
		if ok {
			return func() { g.release(addr) }, nil
		}
		if timer == nil {
			timer = time.NewTimer(g.wait)
			defer timer.Stop()
		}
		select {
		case <-freed:
		case <-timer.C:
			return nil, &busyError{share: share, full: full}
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func (g *gate) release(addr netip.Addr) {
	g.slots.Release(addr)
	g.mu.Lock()
	close(g.freed)
	g.freed = make(chan struct{})
	g.mu.Unlock()
}

// readCapped reads r to its end, at most max bytes (more is
// errTooLarge). Memory follows the bytes that arrive, never the size a
// client declares: the buffer starts small and doubles as it fills, up to
// hint (the declared size) when there is one, so an honest body of a few
// hundred KB costs a handful of copies and a client that declares 8 MiB
// and sends nothing costs nothing.
func readCapped(r io.Reader, max, hint int64) ([]byte, error) {
	const first = 16 << 10
	limit := max + 1 // one byte more tells a body over max
	if hint > 0 && hint < limit {
		limit = hint + 1 // and one more sees the end without another doubling
	}
	buf := make([]byte, 0, min(first, limit))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > max {
				return nil, errTooLarge
			}
			next := 2 * int64(cap(buf))
			if int64(cap(buf)) < limit {
				next = min(next, limit)
			}
			grown := make([]byte, len(buf), min(next, max+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
