package netlimit

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// socketWrites is a body (a bytes.Reader) that counts the WriteTo calls
// given the socket itself, as serve's bodies of pieces are.
type socketWrites struct {
	*bytes.Reader
	direct, calls int
}

func (r *socketWrites) WriteTo(w io.Writer) (int64, error) {
	r.calls++
	if _, ok := w.(syscall.Conn); ok {
		r.direct++
	}
	return r.Reader.WriteTo(w)
}

// connPair returns the server side of a loopback TCP connection, admitted
// by a table with the given slack and a floor rate of rate bytes a second,
// and the client side.
func connPair(t *testing.T, slack time.Duration, rate int64) (*conn, net.Conn, *Table) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	table := NewTable(Limits{Slack: slack, MinRate: rate}, nil, slog.New(slog.DiscardHandler), nil)
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := table.Listener(ln).Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); c.Close() })
	return c.(*conn), client, table
}

// readSlowly reads n bytes from c, chunk bytes every period, and sends
// what it read.
func readSlowly(c net.Conn, n, chunk int, period time.Duration) chan []byte {
	got := make(chan []byte, 1)
	go func() {
		var b []byte
		buf := make([]byte, chunk)
		for len(b) < n {
			m, err := io.ReadFull(c, buf[:min(chunk, n-len(b))])
			b = append(b, buf[:m]...)
			if err != nil {
				break
			}
			// ReadFrom needs a real socket, whose write deadlines the
			// kernel keeps on the wall clock: the reader keeps its pace
			// on the same clock, which no fake one reaches.
			time.Sleep(period)
		}
		got <- b
	}()
	return got
}

// A body handed to ReadFrom goes to the socket itself in one WriteTo
// (serve's pieces: one writev), and a reader above the floor rate gets all
// of it, however long that takes beyond the slack; one below it, or one
// that stops reading, is cut off, through ReadFrom as through Write.
//
// The readers that must get everything have slacks well above the time a
// loaded CI machine may leave their goroutine unscheduled (a 1 s timeout
// cut the fast reader off once under -race at load 16); the slow one takes
// longer in all than its slack.
func TestLimitConnReadFrom(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 32<<20/16) // more than the socket buffers hold
	for _, tc := range []struct {
		name   string
		slack  time.Duration
		rate   int64
		size   int
		chunk  int // the client reads this much each period
		period time.Duration
		cut    bool
	}{
		{"fast", 10 * time.Second, 64 << 10, len(body), 1 << 20, 0, false},
		{"slow, above the rate", time.Second, 1 << 20, 12 << 20, 1 << 20, 250 * time.Millisecond, false},
		{"below the rate", time.Second, 1 << 20, len(body), 8 << 10, 500 * time.Millisecond, true},
		{"stopped", time.Second, 1 << 20, len(body), 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, client, table := connPair(t, tc.slack, tc.rate)
			var got chan []byte
			if tc.chunk > 0 {
				got = readSlowly(client, tc.size, tc.chunk, tc.period)
			}
			r := &socketWrites{Reader: bytes.NewReader(body[:tc.size])}
			start := time.Now()
			n, err := c.ReadFrom(r)
			if r.direct != r.calls || r.calls == 0 {
				t.Errorf("%d of %d WriteTo calls given the socket itself", r.direct, r.calls)
			}
			stalls := testutil.ToFloat64(table.m.stalled)
			if tc.cut {
				if !isTimeout(err) || stalls != 1 {
					t.Fatalf("after %s: %d bytes, %v, %v stalls counted; want a timeout, counted", time.Since(start), n, err, stalls)
				}
				return
			}
			if err != nil || n != int64(tc.size) || stalls != 0 {
				t.Fatalf("after %s: %d of %d bytes, %v, %v stalls counted", time.Since(start), n, tc.size, err, stalls)
			}
			if b := <-got; !bytes.Equal(b, body[:tc.size]) {
				t.Fatalf("the client read %d bytes, not the body's %d", len(b), tc.size)
			}
		})
	}
}

// prefixable is a body that takes a prefix, as serve's bodies of pieces
// do, and counts its WriteTo calls.
type prefixable struct {
	bufs  net.Buffers
	calls int
}

func (p *prefixable) Read(b []byte) (int, error) { return p.bufs.Read(b) }
func (p *prefixable) Prefix(h []byte) bool       { p.bufs = append(net.Buffers{h}, p.bufs...); return true }
func (p *prefixable) WriteTo(w io.Writer) (int64, error) {
	p.calls++
	return p.bufs.WriteTo(w)
}

// A header HoldHeader kept back reaches the client only with what follows
// it: in the body's own WriteTo when the body takes a prefix, before it
// otherwise, or by SendHeld when no body comes; ReadFrom counts the body's
// bytes only. A write too large to be a header is not kept.
func TestLimitConnHoldHeader(t *testing.T) {
	header, body := []byte("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"), []byte("hello world")
	for _, tc := range []struct {
		name  string
		slack time.Duration
		write []byte
		body  io.Reader // nil: SendHeld, no body
		kept  bool      // the write must not reach the client before the body
	}{
		{"prefix", 10 * time.Second, header, &prefixable{bufs: net.Buffers{body[:5], body[5:]}}, true},
		{"prefix, no schedule", 0, header, &prefixable{bufs: net.Buffers{body}}, true},
		{"no prefix", 10 * time.Second, header, &socketWrites{Reader: bytes.NewReader(body)}, true},
		{"no body", 10 * time.Second, header, nil, true},
		{"too large to keep", 10 * time.Second, bytes.Repeat([]byte("h"), heldMax+1), &prefixable{bufs: net.Buffers{body}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, client, _ := connPair(t, tc.slack, 64<<10)
			c.HoldHeader()
			if n, err := c.Write(tc.write); n != len(tc.write) || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
			client.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			early, _ := client.Read(make([]byte, 1))
			if tc.kept != (early == 0) {
				t.Fatalf("%d bytes arrived before the body; kept back: %v", early, tc.kept)
			}
			want := append(append([]byte{}, tc.write[early:]...), body...)
			if tc.body == nil {
				want = tc.write[early:]
				if err := c.SendHeld(); err != nil {
					t.Fatal(err)
				}
			} else if n, err := c.ReadFrom(tc.body); n != int64(len(body)) || err != nil {
				t.Fatalf("ReadFrom: %d, %v; want the body's %d bytes", n, err, len(body))
			}
			if p, ok := tc.body.(*prefixable); ok && p.calls != 1 {
				t.Errorf("%d WriteTo calls, want the header and the body in one", p.calls)
			}
			if err := c.SendHeld(); err != nil { // nothing left: writes nothing
				t.Fatal(err)
			}
			client.SetReadDeadline(time.Now().Add(10 * time.Second))
			got := make([]byte, len(want))
			if _, err := io.ReadFull(client, got); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("client read %q, %v; want %q", got, err, want)
			}
			client.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if n, _ := client.Read(make([]byte, 1)); n != 0 {
				t.Fatal("bytes after the response: something was written twice")
			}
		})
	}
}
