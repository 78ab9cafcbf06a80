package netlimit

import (
	"net/netip"
	"sync"
)

// Slots are the requests a server answers at once, shared fairly between
// addresses: an address may take a slot while it holds fewer than Max over
// the addresses holding some (itself among them) plus one. No few
// addresses can hold every slot, however slowly they read; there is always
// room for an address holding none, while a lone client (a proxy, a load
// test) may still use half of them.
type Slots struct {
	max int

	mu    sync.Mutex
	held  map[netip.Addr]int
	total int
}

// NewSlots returns max slots; zero or less is no bound (Take always
// succeeds).
func NewSlots(max int) *Slots { return &Slots{max: max, held: map[netip.Addr]int{}} }

// Take takes a slot for addr and reports whether it could, the share of
// them addr may hold now, and whether every slot was taken; a slot taken
// is given back with Release.
func (s *Slots) Take(addr netip.Addr) (ok bool, share int, full bool) {
	if s.max <= 0 {
		return true, 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.held)
	if s.held[addr] == 0 {
		n++
	}
	share = max(1, s.max/(n+1))
	if s.total >= s.max || s.held[addr] >= share {
		return false, share, s.total >= s.max
	}
	s.held[addr]++
	s.total++
	return true, share, false
}

// Release gives back a slot Take took for addr.
func (s *Slots) Release(addr netip.Addr) {
	if s.max <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[addr]--; s.held[addr] <= 0 {
		delete(s.held, addr)
	}
	s.total--
}
