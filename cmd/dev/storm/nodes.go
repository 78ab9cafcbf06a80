package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// storm is one storm's setting: who the nodes are and what they send.
type storm struct {
	addr     string
	nodes    int
	inflight int
	sources  []net.IP
	requests [][]byte // by era: the whole request a node of that era writes
	want     [][]byte // by era: the body it must get; nil entries unchecked
	tls      *tls.Config
	timeout  time.Duration
}

// outcome is one storm's result.
type outcome struct {
	took     time.Duration   // first connection to last response
	latency  []time.Duration // per node served, its retries included, sorted
	failures int
	retries  int // tries a node made again, as Ignition does: after a 5xx answer or a broken connection
	firstErr error
	// firstRetry is why a node first tried again.
	firstRetry error
}

// Ignition's retry of a 5xx answer: after 100 ms, doubling up to 5 s
// (ignition/internal/resource/http.go).
const (
	initialBackoff = 100 * time.Millisecond
	maxBackoff     = 5 * time.Second
)

// errFinal is an answer Ignition does not retry: a 4xx, or (here) bytes
// other than the server's own.
var errFinal = errors.New("final")

func newStorm(o options, f *fixture, t *target) (*storm, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(f.caPEM) {
		return nil, errors.New("no CA")
	}
	s := &storm{addr: t.addr, nodes: o.nodes, inflight: o.inflight, sources: sources(o.addrs), want: t.want,
		// No ClientSessionCache: every handshake is a full one, as
		// each node's first (and only) fetch is.
		tls:     &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"},
		timeout: o.timeout}
	for _, e := range t.erasOf(o) {
		h := http.Header{}
		setHeaders(h, e, f.token)
		var b bytes.Buffer
		fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", t.path(o), t.addr)
		_ = h.Write(&b)
		b.WriteString("\r\n")
		s.requests = append(s.requests, b.Bytes())
	}
	if len(s.want) != 0 && len(s.want) != len(s.requests) {
		return nil, fmt.Errorf("%s: %d bodies for %d eras", t.name, len(s.want), len(s.requests))
	}
	return s, nil
}

// sources are n loopback addresses, 127.1.0.1 on, that nodes connect from.
func sources(n int) []net.IP {
	out := make([]net.IP, n)
	for i := range out {
		out[i] = net.IPv4(127, 1, byte(i/250), byte(i%250+1))
	}
	return out
}

// run starts every node, at most inflight at once, and waits for all.
func (s *storm) run(ctx context.Context) outcome {
	var next atomic.Int64
	var mu sync.Mutex
	out := outcome{latency: make([]time.Duration, 0, s.nodes)}
	var wg sync.WaitGroup
	start := time.Now()
	for range min(s.inflight, s.nodes) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= s.nodes || ctx.Err() != nil {
					return
				}
				d, retries, why, err := s.boot(ctx, i)
				mu.Lock()
				out.retries += retries
				if why != nil && out.firstRetry == nil {
					out.firstRetry = fmt.Errorf("node %d: %w", i, why)
				}
				if err != nil {
					out.failures++
					if out.firstErr == nil {
						out.firstErr = fmt.Errorf("node %d: %w", i, err)
					}
				} else {
					out.latency = append(out.latency, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	out.took = time.Since(start)
	slices.Sort(out.latency)
	return out
}

// boot is node i's fetch of its config, tried again after a 5xx answer or
// a connection or handshake that failed, as Ignition does, until the
// storm's timeout.
// why is the first try's error when it was tried again.
func (s *storm) boot(ctx context.Context, i int) (took time.Duration, retries int, why, err error) {
	start := time.Now()
	backoff := initialBackoff
	for ; ; retries++ {
		err := s.node(ctx, i, start)
		if err == nil || errors.Is(err, errFinal) || time.Since(start)+backoff > s.timeout {
			return time.Since(start), retries, why, err
		}
		if why == nil {
			why = err
		}
		select {
		case <-ctx.Done():
			return 0, retries, why, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// node is one try of node i: connect, handshake, one request, the whole
// response read and checked, close.
func (s *storm) node(ctx context.Context, i int, start time.Time) error {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: s.sources[i%len(s.sources)]}, Timeout: s.timeout}
	raw, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return err
	}
	defer raw.Close()
	_ = raw.SetDeadline(start.Add(s.timeout))
	c := tls.Client(raw, s.tls)
	if err := c.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	e := i % len(s.requests)
	if _, err := c.Write(s.requests[e]); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 16<<10), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return fmt.Errorf("%w: %s", errFinal, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	var want []byte
	if len(s.want) != 0 {
		want = s.want[e]
	}
	cmp := &comparer{want: want}
	if _, err := io.Copy(cmp, resp.Body); err != nil {
		return err
	}
	if err := cmp.done(); err != nil {
		return fmt.Errorf("%w: %w", errFinal, err)
	}
	return nil
}

// comparer checks a body against want as it is read, keeping nothing;
// with want nil it only counts.
type comparer struct {
	want []byte
	n    int
	diff bool
}

func (c *comparer) Write(p []byte) (int, error) {
	if c.want != nil && !c.diff {
		if c.n+len(p) > len(c.want) || !bytes.Equal(p, c.want[c.n:c.n+len(p)]) {
			c.diff = true
		}
	}
	c.n += len(p)
	return len(p), nil
}

func (c *comparer) done() error {
	switch {
	case c.want == nil && c.n == 0:
		return errors.New("empty body")
	case c.want == nil:
		return nil
	case c.diff || c.n != len(c.want):
		return fmt.Errorf("body of %d bytes differs from the %d expected", c.n, len(c.want))
	}
	return nil
}
