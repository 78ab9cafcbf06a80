package main

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// connLimits are what a listener lets clients hold: anyone on the cluster
// network can open connections, and each costs a descriptor, a goroutine
// and buffers until it ends.
type connLimits struct {
	max       int           // connections at once, all clients
	perClient int           // connections at once from one address
	stall     time.Duration // longest a response write may make no progress
}

// fdReserve is the descriptors kept for what is not a client connection:
// the source's files, the API server, listeners, logs.
const fdReserve = 128

// connLimits are the options' limits, --max-connections lowered to what
// the open-file limit leaves: past it accept fails, which no client can
// tell from a dead server.
func (o *options) connLimits(log *slog.Logger) connLimits {
	lim := connLimits{max: o.maxConns, perClient: o.maxPerClient, stall: o.writeStall}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < 1<<30 {
		if fit := int(rl.Cur) - fdReserve; fit > 0 && (lim.max <= 0 || fit < lim.max) {
			log.Info("--max-connections lowered to fit the open-file limit", "max-connections", fit, "open-file-limit", rl.Cur)
			lim.max = fit
		}
	}
	return lim
}

// writeChunk is what one write to a client must accept within the stall
// timeout: with the 10 s default, a client reading under 6.5 KB/s is cut off
// (a booting node reads megabytes a second).
const writeChunk = 64 << 10

// connMetrics count what the limits refused.
type connMetrics struct {
	open    prometheus.Gauge
	refused *prometheus.CounterVec // reason
	stalled prometheus.Counter
}

func newConnMetrics(f promauto.Factory) *connMetrics {
	m := &connMetrics{
		open:    f.NewGauge(prometheus.GaugeOpts{Name: "mcs_connections", Help: "Client connections open, on every listener."}),
		refused: f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_connections_refused_total", Help: "Connections closed as soon as accepted, by reason: max (--max-connections), per-client (--max-connections-per-client)."}, []string{"reason"}),
		stalled: f.NewCounter(prometheus.CounterOpts{Name: "mcs_connection_write_stalls_total", Help: "Connections ended because a write made no progress within --write-stall-timeout."}),
	}
	return m
}

// limitListener applies connLimits to a listener's connections. Past a
// limit a new connection is closed at once (Ignition retries); at the
// overall limit an idle keep-alive connection is closed first to make
// room, so that nodes are not locked out by connections doing nothing.
type limitListener struct {
	net.Listener
	*connTable
}

// connTable is the connections of every listener, which the limits count
// together.
type connTable struct {
	lim connLimits
	log *slog.Logger
	m   *connMetrics

	mu     sync.Mutex
	conns  map[*limitConn]struct{}
	byAddr map[netip.Addr]int
}

func newConnTable(lim connLimits, log *slog.Logger, m *connMetrics) *connTable {
	return &connTable{lim: lim, log: log, m: m, conns: map[*limitConn]struct{}{}, byAddr: map[netip.Addr]int{}}
}

func (t *connTable) listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, connTable: t}
}

// Accept returns the next connection within the limits. Errors that pass
// (out of descriptors, a connection aborted before it was accepted) are
// waited out with a backoff, not returned: net/http would log each one and
// retry at once.
func (l *limitListener) Accept() (net.Conn, error) {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !transient(err) {
				return nil, err
			}
			l.log.Warn("accepting connections failed; retrying", "err", err, "cause", "accept-error", "retry", backoff)
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

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
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// admit counts c in, or closes it and returns nil when a limit refuses it.
func (l *connTable) admit(c net.Conn) *limitConn {
	addr := remoteAddr(c)
	l.mu.Lock()
	reason := ""
	switch {
	case l.lim.perClient > 0 && l.byAddr[addr] >= l.lim.perClient:
		reason = "per-client"
	case l.lim.max > 0 && len(l.conns) >= l.lim.max && !l.reclaimIdle():
		reason = "max"
	}
	var lc *limitConn
	if reason == "" {
		lc = &limitConn{Conn: c, l: l, addr: addr}
		l.conns[lc] = struct{}{}
		l.byAddr[addr]++
		l.m.open.Inc()
	}
	l.mu.Unlock()
	if lc == nil {
		c.Close()
		l.m.refused.WithLabelValues(reason).Inc()
		l.log.Warn("connection refused: too many open", "cause", "connections-"+reason, "remote", addr.String(),
			"limit", map[string]int{"per-client": l.lim.perClient, "max": l.lim.max}[reason])
	}
	return lc
}

// reclaimIdle closes the connection idle longest (a keep-alive connection
// between requests, or one that has sent nothing yet), under l.mu, and
// reports whether there was one.
func (l *connTable) reclaimIdle() bool {
	var oldest *limitConn
	var since int64
	for c := range l.conns {
		if s := c.idleSince.Load(); s != 0 && (oldest == nil || s < since) {
			oldest, since = c, s
		}
	}
	if oldest == nil {
		return false
	}
	oldest.idleSince.Store(0)
	go oldest.Close() // its release takes l.mu
	delete(l.conns, oldest)
	l.byAddr[oldest.addr]--
	oldest.released.Store(true)
	l.m.open.Dec()
	return true
}

func (l *connTable) release(c *limitConn) {
	if c.released.Swap(true) {
		return
	}
	l.mu.Lock()
	delete(l.conns, c)
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
	l.mu.Unlock()
	l.m.open.Dec()
}

func remoteAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		a, _ := netip.AddrFromSlice(ta.IP)
		return a.Unmap()
	}
	return netip.Addr{}
}

// connState is the http.Server's ConnState hook: it marks which
// connections are idle, the ones reclaimIdle may close.
func connState(c net.Conn, state http.ConnState) {
	if u, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS
		c = u.NetConn()
	}
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	switch state {
	case http.StateNew, http.StateIdle:
		lc.idleSince.Store(time.Now().UnixNano())
	default:
		lc.idleSince.Store(0)
	}
}

// limitConn is one admitted connection. Its writes must each make
// progress within the stall timeout, rather than the whole response within
// the write timeout: a client that stops reading is cut off in seconds,
// while a large config to a slow but live node is still written.
type limitConn struct {
	net.Conn
	l         *connTable
	addr      netip.Addr
	idleSince atomic.Int64 // unix nanoseconds; 0 while a request is served
	released  atomic.Bool
	deadline  atomic.Int64 // the server's own write deadline, unix nanoseconds; 0 for none

	// A response's header kept back for its body's writev (HoldHeader);
	// only the connection's serving goroutine writes.
	hold bool
	held []byte
}

// heldMax bounds a write HoldHeader keeps: net/http writes a header
// through its 4 KiB buffer; anything larger is written as it comes.
const heldMax = 4 << 10

// HoldHeader keeps the next write back (serve's headerHolder): net/http
// writes a response's header on its own before it hands the body to
// ReadFrom, which sends the two in one writev.
func (c *limitConn) HoldHeader() { c.hold = true }

// SendHeld writes what HoldHeader kept and the body did not take.
func (c *limitConn) SendHeld() error {
	c.hold = false
	if len(c.held) == 0 {
		return nil
	}
	b := c.held
	c.held = c.held[:0]
	_, err := c.write(b)
	return err
}

func (c *limitConn) Close() error {
	c.l.release(c)
	return c.Conn.Close()
}

func (c *limitConn) SetDeadline(t time.Time) error {
	c.deadline.Store(nanos(t))
	return c.Conn.SetDeadline(t)
}

func (c *limitConn) SetWriteDeadline(t time.Time) error {
	c.deadline.Store(nanos(t))
	return c.Conn.SetWriteDeadline(t)
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// CloseWrite lets net/http half-close after an error answer, so the client
// reads it before the connection goes.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *limitConn) Write(b []byte) (int, error) {
	if c.hold {
		c.hold = false
		if len(b) <= heldMax && len(c.held) == 0 {
			c.held = append(c.held, b...)
			return len(b), nil
		}
	}
	if err := c.SendHeld(); err != nil {
		return 0, err
	}
	return c.write(b)
}

func (c *limitConn) write(b []byte) (int, error) {
	if c.l.lim.stall <= 0 {
		return c.Conn.Write(b)
	}
	n := 0
	for len(b) > 0 {
		c.stallDeadline()
		m, err := c.Conn.Write(b[:min(len(b), writeChunk)])
		n, b = n+m, b[m:]
		if err != nil {
			return n, c.stalled(err)
		}
	}
	return n, nil
}

// stallDeadline gives the next write the stall timeout, within the
// server's own deadline.
func (c *limitConn) stallDeadline() {
	d := time.Now().Add(c.l.lim.stall)
	if server := c.deadline.Load(); server != 0 && server < d.UnixNano() {
		d = time.Unix(0, server)
	}
	c.Conn.SetWriteDeadline(d)
}

func (c *limitConn) stalled(err error) error {
	if err != nil && isTimeout(err) {
		c.l.m.stalled.Inc()
	}
	return err
}

// ReadFrom is how net/http hands a response body to the connection rather
// than copying it through its buffers: serve's bodies of pieces reach the
// socket as one writev, as a bare server's body is one write. A stall is
// judged at the rate Write judges it: past each stall deadline the write
// goes on only if writeChunk bytes or more went out since the one before.
// That needs a reader that loses nothing to a failed write (WriteTo
// consumes exactly what was written); any other is written through Write.
//
// A header HoldHeader kept goes first, in the same writev when r takes it
// as a prefix (serve's body of pieces); the count returned is r's bytes.
func (c *limitConn) ReadFrom(r io.Reader) (int64, error) {
	c.hold = false
	rf, direct := c.Conn.(io.ReaderFrom)
	if _, exact := r.(io.WriterTo); !direct || !exact {
		return io.Copy(struct{ io.Writer }{c}, r)
	}
	prefix := 0
	if p, ok := r.(interface{ Prefix([]byte) bool }); ok && len(c.held) > 0 && p.Prefix(c.held) {
		prefix = len(c.held)
	} else if err := c.SendHeld(); err != nil {
		return 0, err
	}
	n, err := c.readFrom(rf, r)
	c.held = c.held[:0]
	return max(n-int64(prefix), 0), err
}

func (c *limitConn) readFrom(rf io.ReaderFrom, r io.Reader) (int64, error) {
	if c.l.lim.stall <= 0 {
		return rf.ReadFrom(r)
	}
	var n int64
	for {
		c.stallDeadline()
		m, err := rf.ReadFrom(r)
		n += m
		if err == nil || !isTimeout(err) || m < writeChunk {
			return n, c.stalled(err)
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
