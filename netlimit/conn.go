package netlimit

import (
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// conn is one admitted connection. A response on it keeps to a schedule
// (see Limits.Slack) rather than only the whole server's write timeout: a
// client that stops reading, or reads slower than the floor rate, is cut
// off in seconds, while a large config to a slow but live node is still
// written.
type conn struct {
	net.Conn
	t         *Table
	addr      netip.Addr
	accepted  int64        // unix nanoseconds
	idleSince atomic.Int64 // unix nanoseconds; 0 while a request is served
	deadline  atomic.Int64 // the server's own write deadline, unix nanoseconds; 0 for none

	// A request began: set from ConnState, read by the writing goroutine.
	newResponse atomic.Bool
	// Only the writing goroutine touches the rest.
	sched schedule
	// A response's header kept back for its body's writev (HoldHeader).
	hold bool
	held []byte
}

var _ HeaderHolder = (*conn)(nil)

// heldMax bounds a write HoldHeader keeps: net/http writes a header
// through its 4 KiB buffer; anything larger is written as it comes.
const heldMax = 4 << 10

// HoldHeader keeps the next write back: net/http writes a response's
// header on its own before it hands the body to ReadFrom, which sends the
// two in one writev.
func (c *conn) HoldHeader() { c.hold = true }

// SendHeld writes what HoldHeader kept and the body did not take.
func (c *conn) SendHeld() error {
	c.hold = false
	if len(c.held) == 0 {
		return nil
	}
	b := c.held
	c.held = c.held[:0]
	_, err := c.write(b)
	return err
}

// Close uncounts the connection, once however often it is called, and
// closes it.
func (c *conn) Close() error {
	c.t.release(c)
	return c.Conn.Close()
}

func (c *conn) SetDeadline(t time.Time) error {
	c.deadline.Store(nanos(t))
	return c.Conn.SetDeadline(t)
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	c.deadline.Store(nanos(t))
	return c.Conn.SetWriteDeadline(t)
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// halfCloser is a connection net/http can half-close (a TCP one).
type halfCloser interface{ CloseWrite() error }

var _ halfCloser = (*conn)(nil)

// CloseWrite lets net/http half-close after an error answer, so the client
// reads it before the connection goes.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(halfCloser); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *conn) Write(b []byte) (int, error) {
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

// write writes b whole by the time the schedule has it due.
func (c *conn) write(b []byte) (int, error) {
	if !c.paced() {
		return c.Conn.Write(b)
	}
	c.sched.begin(c.t.clock.Now(), c.newResponse.Swap(false))
	c.Conn.SetWriteDeadline(c.sched.deadline(c.sched.sent+int64(len(b)), c.deadline.Load()))
	n, err := c.Conn.Write(b)
	c.sched.wrote(int64(n), c.t.clock.Now())
	return n, c.stalled(err)
}

// ReadFrom is how net/http hands a response body to the connection rather
// than copying it through its buffers: serve's bodies of pieces reach the
// socket as one writev. Each pass may run until the schedule has another
// readStep bytes due; one that times out goes on while the client is
// within the schedule. That needs a reader that loses nothing to a failed
// write (WriteTo consumes exactly what was written); any other is written
// through Write.
//
// A header HoldHeader kept goes first, in the same writev when r is a
// Prefixer that takes it; the count returned is r's bytes.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	c.hold = false
	rf, direct := c.Conn.(io.ReaderFrom)
	if _, exact := r.(io.WriterTo); !direct || !exact {
		return io.Copy(struct{ io.Writer }{c}, r)
	}
	prefix := 0
	if p, ok := r.(Prefixer); ok && len(c.held) > 0 && p.Prefix(c.held) {
		prefix = len(c.held)
	} else if err := c.SendHeld(); err != nil {
		return 0, err
	}
	n, err := c.readFrom(rf, r)
	c.held = c.held[:0]
	return max(n-int64(prefix), 0), err
}

// readStep is how far ahead of what was sent one ReadFrom pass may run.
const readStep = 256 << 10

func (c *conn) readFrom(rf io.ReaderFrom, r io.Reader) (int64, error) {
	if !c.paced() {
		return rf.ReadFrom(r)
	}
	c.sched.begin(c.t.clock.Now(), c.newResponse.Swap(false))
	var n int64
	for {
		c.Conn.SetWriteDeadline(c.sched.deadline(c.sched.sent+readStep, c.deadline.Load()))
		m, err := rf.ReadFrom(r)
		n += m
		now := c.t.clock.Now()
		c.sched.wrote(m, now)
		if err == nil || !isTimeout(err) || c.sched.behind(now, c.deadline.Load()) {
			return n, c.stalled(err)
		}
	}
}

func (c *conn) paced() bool { return c.sched.lim.Slack > 0 && c.sched.lim.MinRate > 0 }

// stalled counts a write cut off by the schedule (not the server's own
// deadline).
func (c *conn) stalled(err error) error {
	if err == nil || !isTimeout(err) {
		return err
	}
	if server := c.deadline.Load(); server == 0 || c.t.clock.Now().UnixNano() < server {
		c.t.m.stalled.Inc()
	}
	return err
}

// schedule is a response's: it must have sent n bytes by start + Slack +
// n/MinRate.
type schedule struct {
	lim              Limits
	start, lastWrite time.Time
	sent             int64
}

// begin starts a new schedule when a request began since the last write,
// or when nothing was written for a second (HTTP/2, whose connection is
// active throughout): a client's reading cannot make those gaps, only the
// server's not writing.
func (s *schedule) begin(now time.Time, newRequest bool) {
	if newRequest || s.start.IsZero() || now.Sub(s.lastWrite) > time.Second {
		*s = schedule{lim: s.lim, start: now}
	}
}

func (s *schedule) wrote(n int64, now time.Time) {
	s.sent += n
	s.lastWrite = now
}

// due is when n bytes must have been sent.
func (s *schedule) due(n int64) time.Time {
	return s.start.Add(s.lim.Slack + time.Duration(float64(n)/float64(s.lim.MinRate)*float64(time.Second)))
}

// deadline is the write deadline for total bytes: when they are due, or
// the server's own deadline (unix nanoseconds, 0 for none) when sooner.
func (s *schedule) deadline(total, server int64) time.Time {
	d := s.due(total)
	if server != 0 && server < d.UnixNano() {
		d = time.Unix(0, server)
	}
	return d
}

// behind reports whether the response is behind its schedule, or the
// server's own deadline passed.
func (s *schedule) behind(now time.Time, server int64) bool {
	return !now.Before(s.due(s.sent)) || server != 0 && now.UnixNano() >= server
}
