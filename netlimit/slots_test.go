package netlimit

import (
	"fmt"
	"net/netip"
	"testing"
)

// Addresses that keep taking slots hold at most Max over the addresses
// holding some plus one each: 4 addresses leave a fifth of the slots, 200
// leave room still, and a new address (a node) gets one while they hold
// what they can; a lone client may hold half. Every slot given back, none
// is held.
func TestSlotsShare(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       int
		attackers int
		wantHeld  int // by the attackers together, each taking all it can
	}{
		{"one client", 1024, 1, 512},
		{"4 addresses", 1024, 4, 4 * 204},
		{"200 addresses", 1024, 200, 200 * 5},
		{"more addresses than slots", 8, 20, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSlots(tc.max)
			var taken []netip.Addr
			held := 0
			for round := 0; round < tc.max; round++ {
				for i := range tc.attackers {
					a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
					if ok, _, _ := s.Take(a); ok {
						held++
						taken = append(taken, a)
					}
				}
			}
			if held != tc.wantHeld {
				t.Errorf("the attackers hold %d slots, want %d", held, tc.wantHeld)
			}
			node := netip.MustParseAddr("192.0.2.1")
			ok, share, full := s.Take(node)
			if held < tc.max && !ok {
				t.Errorf("a node was refused (share %d, full %v) with %d of %d slots held", share, full, held, tc.max)
			}
			if ok {
				taken = append(taken, node)
			}
			for _, a := range taken {
				s.Release(a)
			}
			if s.total != 0 || len(s.held) != 0 {
				t.Errorf("after every release: %d held by %d addresses", s.total, len(s.held))
			}
		})
	}
}

// Without a bound every request gets a slot.
func TestSlotsUnbounded(t *testing.T) {
	s := NewSlots(0)
	for i := range 1000 {
		if ok, _, _ := s.Take(netip.MustParseAddr(fmt.Sprintf("10.0.%d.%d", i/256, i%256))); !ok {
			t.Fatal("refused without a bound")
		}
	}
}
