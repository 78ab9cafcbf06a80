package pipeline

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"io"
	"net"
	"sync"
	"syscall"
	"unique"
	"unsafe"

	"github.com/ignition-mcs/mcs/netlimit"
)

// Body is a served body held as the pieces it is written from: the
// config's own bytes, and its large file contents, each held once however
// many versions, pools and snapshots serve it (see intern). The body is
// the pieces' concatenation.
type Body struct {
	pieces [][]byte // never modified: they alias interned strings
	// keep holds the interned contents' handles: while any is held, the
	// same content interned again is this copy, not another.
	keep []unique.Handle[string]
	size int
}

// BytesBody is a body of one piece.
func BytesBody(b []byte) *Body { return &Body{pieces: [][]byte{b}, size: len(b)} }

// writeBufSize is a body writer's buffer: the small pieces between
// contents are coalesced in it, and a piece larger than what is left is
// written from where it lies, after one flush (bufio does so when the
// buffer is empty). It is held for as long as a client takes to read, so
// it stays small: 256 KiB each made 1,100 clients that never read cost
// 430 MB (docs/reliability.md).
const writeBufSize = 32 << 10

// writers coalesce a body's pieces into large writes where they cannot be
// handed to the connection as they are (TLS, HTTP/2, a connection wrapped
// by a listener): written one by one, each held-out content would flush
// net/http's 4 KB buffer around it, a syscall (and on TLS a small record)
// per piece — measured at 0.4 of a bare server's requests/s. A fixed free
// list, not a sync.Pool: a pool is emptied at every GC, and reallocating
// 256 KB buffers after each one showed in the p99. Idle, it holds at most
// cap(writers) buffers.
var writers = make(chan *bufio.Writer, 16)

func getWriter(w io.Writer) *bufio.Writer {
	select {
	case bw := <-writers:
		bw.Reset(w)
		return bw
	default:
		return bufio.NewWriterSize(w, writeBufSize)
	}
}

func putWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	select {
	case writers <- bw:
	default:
	}
}

// Send writes the body and returns how many bytes were written. Given
// to net/http's ReadFrom, a body reaches a plain TCP connection as one
// writev of its pieces, copied by nobody (see pieceReader). The pieces are
// written as bytes, not strings, so that no writer (a wrapper without
// WriteString) copies them; io.Writer must not modify them.
func (b *Body) Send(w io.Writer) int {
	if len(b.pieces) == 1 {
		n, _ := w.Write(b.pieces[0])
		return n
	}
	r := pieceReaders.Get().(*pieceReader)
	r.all = append(append(r.all[:0], nil), b.pieces...)
	r.bufs = r.all[1:]
	var n int64
	if rf, ok := w.(io.ReaderFrom); ok {
		n, _ = rf.ReadFrom(r)
	} else {
		n, _ = r.WriteTo(w)
	}
	clear(r.all) // no pool entry keeps a snapshot's pieces alive
	r.bufs = nil
	pieceReaders.Put(r)
	return int(n)
}

// pieceReader reads a body's pieces in order. net/http's ReadFrom copies
// the first 512 bytes through its buffers (Read) and, on a plain TCP
// connection, hands the rest to the connection's ReadFrom, which calls
// WriteTo with the connection itself: one writev of every piece, as a
// contiguous body would be one write, with no copy and no buffer held
// while a slow client reads. A connection wrapper must pass ReadFrom on
// (mcs's connection limit does). Anything else (TLS, HTTP/2: net/http then
// calls WriteTo with the response) gets the pieces coalesced through a
// write buffer.
type pieceReader struct {
	bufs net.Buffers // what is left to write: WriteTo and Read consume it
	all  net.Buffers // bufs's backing array: a slot for Prefix, then the body's pieces
}

var _ netlimit.Prefixer = (*pieceReader)(nil)

var pieceReaders = sync.Pool{New: func() any { return new(pieceReader) }}

func (r *pieceReader) Read(p []byte) (int, error) { return r.bufs.Read(p) }

// Prefix puts p before what is left to write and reports whether it could:
// a connection that kept the response's header back (see holdHeader) sends
// it in the body's writev. p was written before anything left here, so the
// order holds whatever Read took first; only a Read that consumed whole
// pieces leaves no slot.
func (r *pieceReader) Prefix(p []byte) bool {
	if len(r.bufs) != len(r.all)-1 || len(r.all) == 0 {
		return false
	}
	r.all[0] = p
	r.bufs = r.all
	return true
}

func (r *pieceReader) WriteTo(w io.Writer) (int64, error) {
	if _, ok := w.(syscall.Conn); ok { // one of package net's own sockets
		return r.bufs.WriteTo(w)
	}
	bw := getWriter(w)
	var n int64
	var err error
	for _, p := range r.bufs {
		var m int
		m, err = bw.Write(p)
		n += int64(m)
		if err != nil {
			break
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	n -= int64(bw.Buffered())
	putWriter(bw)
	r.bufs = nil
	return n, err
}

// Bytes joins the pieces: for the rarely asked forms (gzip, pretty).
func (b *Body) Bytes() []byte { return bytes.Join(b.pieces, nil) }

// Pieces is how many pieces the body is written from: one is written as
// it is, more through Send's writev.
func (b *Body) Pieces() int { return len(b.pieces) }

// intern is b held once: unique shares equal pieces (file contents, and
// the config's own bytes between them, which pools selecting the same
// MachineConfigs have in common) across versions, pools and snapshots
// while a body holds their handles. Pieces are looked up by content, never
// by address; Make copies b only when no equal piece is held, so b may be
// a buffer its owner reuses.
func intern(b []byte) ([]byte, unique.Handle[string]) {
	hd := unique.Make(unsafe.String(unsafe.SliceData(b), len(b)))
	v := hd.Value()
	return unsafe.Slice(unsafe.StringData(v), len(v)), hd
}

// contents interns the contents an Encoder holds out, for
// convert.Encoder.ShareContents, keeping their handles until every spec of
// the pool is encoded: the body pieces then are the Encoder's.
type contents struct {
	mu   sync.Mutex
	keep []unique.Handle[string]
}

func (c *contents) share(b []byte) []byte {
	shared, hd := intern(b)
	c.mu.Lock()
	c.keep = append(c.keep, hd)
	c.mu.Unlock()
	return shared
}

// newBody builds a body from segs, each piece interned, and returns it
// with the SHA-256 of its bytes.
func newBody(segs [][]byte) (*Body, [sha256.Size]byte) {
	b := &Body{pieces: make([][]byte, 0, len(segs)), keep: make([]unique.Handle[string], 0, len(segs))}
	h := sha256.New()
	for _, s := range segs {
		if len(s) == 0 {
			continue
		}
		h.Write(s)
		b.size += len(s)
		piece, hd := intern(s)
		b.pieces = append(b.pieces, piece)
		b.keep = append(b.keep, hd)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return b, sum
}
