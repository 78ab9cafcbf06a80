package netlimit

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// limited serves accepted connections of a listener under lim on
// 127.0.0.1 by holding them open until the client closes; it returns the
// address and the table. Its connections are idle, or with busy all busy
// (never idle), as slow readers' are.
func limited(t *testing.T, lim Limits, busy ...bool) (string, *Table) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ct := NewTable(lim, nil, slog.New(slog.DiscardHandler), nil)
	l := ct.Listener(ln)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if len(busy) > 0 && busy[0] {
				ConnState(c, http.StateActive)
			} else {
				ConnState(c, http.StateNew)
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	return ln.Addr().String(), ct
}

func dialFrom(t *testing.T, src, addr string) net.Conn {
	c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c within a second.
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(time.Second))
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF || (err != nil && !isTimeout(err))
}

func TestConnectionLimits(t *testing.T) {
	addr, ct := limited(t, Limits{Max: 3, PerClient: 2})
	a1, a2 := dialFrom(t, "127.0.0.1", addr), dialFrom(t, "127.0.0.1", addr)
	a3 := dialFrom(t, "127.0.0.1", addr)
	if !closedByServer(a3) {
		t.Error("a third connection from one address was kept, over --max-connections-per-client 2")
	}
	b1 := dialFrom(t, "127.0.0.2", addr)
	if closedByServer(b1) {
		t.Error("another address's connection was refused")
	}
	// At the overall cap, the connection idle longest makes room.
	b2 := dialFrom(t, "127.0.0.2", addr)
	if closedByServer(b2) {
		t.Error("at the cap, the new connection was refused though others were idle")
	}
	if !closedByServer(a1) || closedByServer(a2) {
		t.Error("the connection idle longest was not the one closed")
	}
	if v := testutil.ToFloat64(ct.m.refused.WithLabelValues("per-client")); v != 1 {
		t.Errorf("refused per-client %v, want 1", v)
	}
}

// At --max-connections with no connection idle, an address holding less
// than its share gets in: the oldest connection of the address holding the
// most is closed for it. An address at its share is refused.
func TestFairShareAtMax(t *testing.T) {
	addr, ct := limited(t, Limits{Max: 8}, true)
	var heavy []net.Conn
	for i := range 6 {
		heavy = append(heavy, dialFrom(t, "127.0.0.2", addr))
		if i == 0 {
			waitOpen(t, ct, 1) // the oldest is the first
		}
	}
	dialFrom(t, "127.0.0.3", addr)
	dialFrom(t, "127.0.0.3", addr)
	waitOpen(t, ct, 8)
	dialFrom(t, "127.0.0.4", addr)
	if !closedByServer(heavy[0]) {
		t.Fatal("at the cap, a new address got no room: the heaviest address's oldest connection was not closed")
	}
	waitFor(t, "5, 2 and 1 connections of the three addresses", func() bool {
		return ct.held("127.0.0.2") == 5 && ct.held("127.0.0.3") == 2 && ct.held("127.0.0.4") == 1
	})
	if v := testutil.ToFloat64(ct.m.closed.WithLabelValues("share")); v != 1 {
		t.Errorf("closed for share %v, want 1", v)
	}
	// 127.0.0.3 holds 2, its share at 3 addresses is 8/4: refused.
	if !closedByServer(dialFrom(t, "127.0.0.3", addr)) {
		t.Error("an address at its share got in at the cap")
	}
}

// held is how many connections addr holds.
func (t *Table) held(addr string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byAddr[netip.MustParseAddr(addr)]
}

// waitFor waits for what the listener's goroutine does asynchronously.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, what, func() error {
		if !ok() {
			return errors.New("not yet")
		}
		return nil
	})
}

func waitOpen(t *testing.T, ct *Table, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d connections open", n), func() bool { return int(testutil.ToFloat64(ct.m.open)) == n })
}

// A reclaim storm: at a cap of 4, clients from 8 addresses connect and
// hang up as fast as they can, each new connection closing an idle one.
// mcs_connections is never negative, and once every client is gone it is
// 0 and no address is left counted (once, the gauge reached -38: a
// reclaimed connection's own Close counted it out a second time).
func TestReclaimStorm(t *testing.T) {
	addr, ct := limited(t, Limits{Max: 4})
	var stop atomic.Bool
	var low atomic.Int64
	go func() {
		for !stop.Load() {
			low.Store(min(low.Load(), int64(testutil.ToFloat64(ct.m.open))))
		}
	}()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("127.0.0.%d", i+1))}}
			for range 150 {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					continue
				}
				if i%2 == 0 { // wait to be reclaimed, a little
					c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
					c.Read(make([]byte, 1))
				}
				c.Close()
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	waitOpen(t, ct, 0)
	if l := low.Load(); l < 0 {
		t.Errorf("mcs_connections went down to %d", l)
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if len(ct.conns) != 0 || len(ct.byAddr) != 0 {
		t.Errorf("after every client left: %d connections, %d addresses counted", len(ct.conns), len(ct.byAddr))
	}
}

// A response keeps to its schedule: one of n bytes is written within the
// slack plus n over the floor rate. On a fake clock (net.Pipe in a
// synctest bubble), a 2 MB body to a client reading 8 KB/s is cut off when
// 5 s + 2 MB at 64 KiB/s have passed, with about 300 KB read; one reading
// 128 KB/s gets all of it; the schedule starts again with each request.
func TestSchedule(t *testing.T) {
	const body = 2 << 20
	for _, tc := range []struct {
		name    string
		rate    int // bytes a second the client reads
		cut     bool
		cutAfer time.Duration
	}{
		{"slow reader", 8 << 10, true, 5*time.Second + body*time.Second/(64<<10)},
		{"node", 128 << 10, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				server, client := net.Pipe()
				table := NewTable(Limits{Slack: 5 * time.Second, MinRate: 64 << 10}, nil, slog.New(slog.DiscardHandler), nil)
				c := &conn{Conn: server, t: table, sched: schedule{lim: table.lim}}
				done := make(chan struct{})
				defer func() { c.Close(); <-done }()
				go func() { readAt(client, tc.rate); close(done) }()
				for req := range 2 {
					ConnState(c, http.StateActive)
					start := time.Now()
					_, err := c.Write(make([]byte, body))
					took := time.Since(start)
					if !tc.cut {
						if err != nil {
							t.Fatalf("request %d: %v after %v", req, err, took)
						}
						continue
					}
					if !isTimeout(err) || took != tc.cutAfer {
						t.Fatalf("cut off after %v with %v, want a timeout after %v", took, err, tc.cutAfer)
					}
					if v := testutil.ToFloat64(table.m.stalled); v != 1 {
						t.Errorf("%v stalls counted, want 1", v)
					}
					return
				}
			})
		})
	}
}

// readAt reads c at rate bytes a second, until it is closed; only in a
// synctest bubble, whose clock paces it.
func readAt(c net.Conn, rate int) {
	defer c.Close()
	buf := make([]byte, rate/10)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the synctest bubble's fake clock
	}
}
