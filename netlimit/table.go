package netlimit

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/internal/prom"
)

// Limits are what a client may hold of a server's listeners: anyone on the
// cluster network can open connections, and each costs a descriptor, a
// goroutine and buffers until it ends. A zero field is no bound.
type Limits struct {
	Max       int // connections at once, all clients
	PerClient int // connections at once from one address
	// A response must have sent n bytes by Slack + n/MinRate after its
	// first write (MinRate in bytes a second): a booting node reads
	// megabytes a second, a client reading slower holds a connection (and
	// a request slot) only seconds. Zero Slack or MinRate: only the
	// server's own write deadline.
	Slack   time.Duration
	MinRate int64
}

// Metrics count what the limits refused; NewMetrics registers them.
type Metrics struct {
	open    prometheus.Gauge
	refused *prometheus.CounterVec // reason
	closed  *prometheus.CounterVec // reason
	stalled prometheus.Counter
}

// NewMetrics registers the connection metrics on reg (nil: none).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	f, registered := prom.With(reg)
	m := &Metrics{
		open: f.NewGauge(prometheus.GaugeOpts{Name: "mcs_connections", Help: "Client connections open, on every listener."}),
		refused: f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_connections_refused_total",
			Help: "Connections closed as soon as accepted, by reason: max (--max-connections), per-client (--max-connections-per-client)."}, []string{"reason"}),
		closed: f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_connections_closed_for_room_total",
			Help: "Open connections closed to admit a new one at --max-connections, by reason: idle (the one idle longest), share (the oldest of the address holding the most, over its fair share)."}, []string{"reason"}),
		stalled: f.NewCounter(prometheus.CounterOpts{Name: "mcs_connection_write_stalls_total",
			Help: "Connections ended because a response fell behind --min-write-rate by more than --write-stall-timeout."}),
	}
	return m, registered()
}

// Table is the connections of every listener, which the limits count
// together. Past a limit a new connection is closed at once (Ignition
// retries); at the overall limit an idle connection is closed first to
// make room, else, for an address holding less than its fair share
// (Max over the addresses holding connections, plus one), the oldest
// connection of the address holding the most: no few addresses can keep
// every node out.
type Table struct {
	lim   Limits
	log   *slog.Logger
	m     *Metrics
	clock Clock

	mu     sync.Mutex
	conns  map[*conn]struct{}
	byAddr map[netip.Addr]int
}

// NewTable returns an empty table; a nil clock is the wall clock, nil
// metrics count nowhere.
func NewTable(lim Limits, clock Clock, log *slog.Logger, m *Metrics) *Table {
	if clock == nil {
		clock = wallClock{}
	}
	if m == nil {
		m, _ = NewMetrics(nil)
	}
	return &Table{lim: lim, log: log, m: m, clock: clock, conns: map[*conn]struct{}{}, byAddr: map[netip.Addr]int{}}
}

// Listener is ln with its connections counted in t.
func (t *Table) Listener(ln net.Listener) net.Listener { return &listener{Listener: ln, t: t} }

type listener struct {
	net.Listener
	t *Table
}

// Accept returns the next connection within the limits. An error that
// passes by itself (out of descriptors or buffers, a connection aborted
// before it was accepted) is returned as a temporary one, which
// http.Server waits out with its own backoff (5 ms doubling to 1 s).
func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if transient(err) {
				return nil, temporary{err}
			}
			return nil, err
		}
		if lc := l.t.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// temporary is an Accept error http.Server retries after a backoff.
type temporary struct{ error }

func (temporary) Timeout() bool   { return false }
func (temporary) Temporary() bool { return true }
func (e temporary) Unwrap() error { return e.error }

// transient reports whether an Accept error passes by itself.
func transient(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno == syscall.EMFILE || errno == syscall.ENFILE || errno == syscall.ENOBUFS ||
			errno == syscall.ENOMEM || errno == syscall.ECONNABORTED || errno == syscall.EINTR
	}
	return isTimeout(err)
}

// admit counts c in, or closes it and returns nil when a limit refuses it.
func (t *Table) admit(c net.Conn) *conn {
	addr := address(c)
	t.mu.Lock()
	reason := t.refusal(addr)
	var lc *conn
	if reason == "" {
		lc = &conn{Conn: c, t: t, addr: addr, accepted: t.clock.Now().UnixNano(), sched: schedule{lim: t.lim}}
		t.conns[lc] = struct{}{}
		t.byAddr[addr]++
		t.m.open.Inc()
	}
	t.mu.Unlock()
	if lc == nil {
		c.Close()
		t.m.refused.WithLabelValues(reason).Inc()
		t.log.Warn("connection refused: too many open", "cause", "connections-"+reason, "remote", addr.String(),
			"limit", map[string]int{"per-client": t.lim.PerClient, "max": t.lim.Max}[reason])
	}
	return lc
}

// refusal is why a new connection from addr is refused, "" when it is not
// (room made for it when needed), under t.mu.
func (t *Table) refusal(addr netip.Addr) string {
	held := t.byAddr[addr]
	switch {
	case t.lim.PerClient > 0 && held >= t.lim.PerClient:
		return "per-client"
	case t.lim.Max <= 0 || len(t.conns) < t.lim.Max:
		return ""
	case t.reclaimIdle():
		return ""
	case held < t.share(addr) && t.reclaimHeaviest():
		return ""
	}
	return "max"
}

// share is the connections an address may hold when the table is full:
// Max over the addresses holding some, addr among them, plus one.
func (t *Table) share(addr netip.Addr) int {
	n := len(t.byAddr)
	if t.byAddr[addr] == 0 {
		n++
	}
	return max(1, t.lim.Max/(n+1))
}

// reclaimIdle closes the connection idle longest (a keep-alive connection
// between requests, or one that has sent nothing yet), under t.mu, and
// reports whether there was one.
func (t *Table) reclaimIdle() bool {
	var oldest *conn
	var since int64
	for c := range t.conns {
		if s := c.idleSince.Load(); s != 0 && (oldest == nil || s < since) {
			oldest, since = c, s
		}
	}
	if oldest == nil {
		return false
	}
	t.closeForRoom(oldest, "idle")
	return true
}

// reclaimHeaviest closes the oldest connection of the address holding the
// most, when it holds more than its share, under t.mu, and reports whether
// it did.
func (t *Table) reclaimHeaviest() bool {
	var heavy netip.Addr
	most := 0
	for a, n := range t.byAddr {
		if n > most {
			heavy, most = a, n
		}
	}
	if most <= t.share(heavy) {
		return false
	}
	var oldest *conn
	for c := range t.conns {
		if c.addr == heavy && (oldest == nil || c.accepted < oldest.accepted) {
			oldest = c
		}
	}
	t.closeForRoom(oldest, "share")
	return true
}

// closeForRoom drops c from the table and closes its socket, under t.mu.
// Its own Close, when its serving goroutine gets to it, finds it gone and
// counts nothing twice.
func (t *Table) closeForRoom(c *conn, reason string) {
	t.drop(c)
	t.m.closed.WithLabelValues(reason).Inc()
	go c.Conn.Close() // not c.Close: its release takes t.mu
}

// drop removes c from the table, under t.mu; the table's map is the one
// record of whether c is counted, so nothing is uncounted twice.
func (t *Table) drop(c *conn) {
	if _, ok := t.conns[c]; !ok {
		return
	}
	delete(t.conns, c)
	if t.byAddr[c.addr]--; t.byAddr[c.addr] <= 0 {
		delete(t.byAddr, c.addr)
	}
	t.m.open.Dec()
}

func (t *Table) release(c *conn) {
	t.mu.Lock()
	t.drop(c)
	t.mu.Unlock()
}

// ConnState is an http.Server's ConnState hook: it marks which connections
// are idle (the ones a full table may close) and where a response begins
// (its write schedule starts again).
func ConnState(c net.Conn, state http.ConnState) {
	if u, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS
		c = u.NetConn()
	}
	lc, ok := c.(*conn)
	if !ok {
		return
	}
	switch state {
	case http.StateNew, http.StateIdle:
		lc.idleSince.Store(lc.t.clock.Now().UnixNano())
	case http.StateActive:
		lc.idleSince.Store(0)
		lc.newResponse.Store(true)
	default:
		lc.idleSince.Store(0)
	}
}
