package serve

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/skewgate"
)

// generations builds n snapshots of one pool, generation g serving
// /etc/generation = g, and maps every body they can serve to its generation.
func generations(tb testing.TB, n int) ([]*pipeline.Snapshot, map[string]int) {
	tb.Helper()
	snaps := make([]*pipeline.Snapshot, n)
	gen := map[string]int{}
	for g := range n {
		ign := fmt.Sprintf(`{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/generation","overwrite":true,"contents":{"source":"data:,%d"}}]}}`, g)
		snap, err := pipeline.BuildSnapshot(uint64(g+1), []*render.Result{result(tb, "worker", ign)}, nil, render.NodeFiles{})
		if err != nil {
			tb.Fatal(err)
		}
		snaps[g] = snap
		p := snap.Pool("worker")
		for _, v := range convert.OutputVersions {
			if r := p.Response(v); r != nil {
				gen[string(r.Body.Bytes())] = g
			}
		}
	}
	return snaps, gen
}

// Generations are swapped in, in order, while clients fetch, each swap
// after a request has completed: every response is 200 and exactly one
// generation's precomputed body, each client sees generations in order,
// and the last one swapped in is what is served after. How many requests
// a machine serves meanwhile is BenchmarkRequestsDuringSwaps's.
func TestReloadUnderLoad(t *testing.T) {
	const gens, clients, requests = 40, 8, 30
	snaps, gen := generations(t, gens)
	s := mustNew(t, Config{})
	s.Swap(snaps[0])
	ts := httptest.NewServer(s)
	defer ts.Close()

	progress := make(chan struct{}, 1) // a request completed
	done := make(chan struct{})        // every client finished
	swapped := make(chan int, 1)
	go func() {
		g := 0
		defer func() { swapped <- g }()
		for g+1 < gens {
			select {
			case <-done:
				return
			case <-progress:
			}
			g++
			s.Swap(snaps[g])
		}
	}()
	var wg sync.WaitGroup
	problems := make(chan string, clients*requests)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			accept := []string{hdr36, hdr34, hdr32, hdrSpec2}[c%4]
			last := 0
			for range requests {
				g, problem := fetchGeneration(ts.URL, accept, gen)
				if problem == "" && g < last {
					problem = fmt.Sprintf("generation %d after %d", g, last)
				}
				if problem != "" {
					problems <- problem
				}
				last = max(last, g)
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	close(problems)
	for p := range problems {
		t.Error(p)
	}
	final := <-swapped
	if g, problem := fetchGeneration(ts.URL, hdr36, gen); g != final || problem != "" {
		t.Errorf("after the swaps: generation %d (%s), want %d", g, problem, final)
	}
}

// fetchGeneration GETs the worker config and returns the generation whose
// body it is, or what is wrong with the response.
func fetchGeneration(base, accept string, gen map[string]int) (int, string) {
	req, _ := http.NewRequest("GET", base+"/config/worker", nil)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	g, ok := gen[string(body)]
	switch {
	case err != nil:
		return 0, err.Error()
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Sprintf("status %d: %s", resp.StatusCode, body)
	case !ok:
		return 0, fmt.Sprintf("a body of no generation: %.80s", body)
	}
	return g, ""
}

// BenchmarkRequestsDuringSwaps measures requests over loopback while a
// new generation is swapped in every millisecond.
func BenchmarkRequestsDuringSwaps(b *testing.B) {
	snaps, gen := generations(b, 6)
	s := mustNew(b, Config{})
	s.Swap(snaps[0])
	ts := httptest.NewServer(s)
	defer ts.Close()
	testkit.Every(b, time.Millisecond, func(i int) { s.Swap(snaps[i%len(snaps)]) })
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, problem := fetchGeneration(ts.URL, hdr36, gen); problem != "" {
				b.Error(problem)
			}
		}
	})
}

// discardWriter is a ResponseWriter with what net/http's has on the
// request path (ReadFrom, Flush), writing nowhere.
type discardWriter struct {
	h http.Header
	n int64 // body bytes written
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) WriteHeader(int)     {}
func (d *discardWriter) Flush()              {}

func (d *discardWriter) Write(b []byte) (int, error) {
	d.n += int64(len(b))
	return len(b), nil
}

// ReadFrom takes a body of pieces as a socket would (one writev), without
// copying it: the benchmark measures the handler, not memcpy. A body's
// reader hands a socket (a syscall.Conn) its pieces as they are, one Write
// each here.
func (d *discardWriter) ReadFrom(r io.Reader) (int64, error) {
	if wt, ok := r.(io.WriterTo); ok {
		return wt.WriteTo(d)
	}
	return io.Copy(io.Discard, r)
}

// SyscallConn makes the writer look like a socket to a body's reader.
func (d *discardWriter) SyscallConn() (syscall.RawConn, error) {
	return nil, errors.New("not a socket")
}

// requestPath returns, for a node's Accept and User-Agent, a function that
// serves its config request through the whole handler as cmd/mcs
// configures it (skew gate on, logging off), to a writer that discards
// the body, and returns the body bytes written.
func requestPath(tb testing.TB) func(accept, ua string) (serve func() int64) {
	s := newTestServer(tb, Config{Gate: skewgate.New(nil, nil)}, result(tb, "worker", sharedIgn, "a=b"))
	if n := s.Snapshot().Pool("worker").Response(convert.V3_4).Body.Pieces(); n < 3 {
		tb.Fatalf("%d pieces: the contents were not held out", n)
	}
	return func(accept, ua string) func() int64 {
		req := httptest.NewRequest("GET", "/config/worker", nil)
		req.Header.Set("Accept", accept)
		req.Header.Set("User-Agent", ua)
		w := &discardWriter{h: http.Header{}}
		return func() int64 {
			clear(w.h)
			w.n = 0
			s.ServeHTTP(w, req)
			return w.n
		}
	}
}

// BenchmarkRequestPath measures the handler alone: routing, negotiation,
// the skew gate, selection, metrics, the log middleware, and the write.
func BenchmarkRequestPath(b *testing.B) {
	path := requestPath(b)
	for _, c := range requestPathCases {
		b.Run(c.name, func(b *testing.B) {
			serve := path(c.accept, c.ua)
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}

var requestPathCases = []struct{ name, accept, ua string }{
	{"3.6", hdr36, "Ignition/v2.27.0"},
	{"3.4", hdr34, "Ignition/v2.15.0"},
	{"spec2", hdrSpec2, "Ignition/v0.35.0"},
}

// TestRequestPathAllocs holds the request path to what it allocates now:
// the request's one context copy and its state (withState: the context
// is never pooled, see requestState) and chi's path value. Each
// allocation is garbage the collector works through at every request.
func TestRequestPathAllocs(t *testing.T) {
	path := requestPath(t)
	for _, c := range requestPathCases {
		t.Run(c.name, func(t *testing.T) {
			serve := path(c.accept, c.ua)
			if serve() < 4096 { // caches filled, the spec encoded
				t.Fatal("no body written")
			}
			limit := requestPathAllocs
			if raceEnabled {
				// The race detector drops a quarter of what is put in a
				// sync.Pool: the request's parts, chi's parameters and the
				// body's reader are then made anew (4–5 on average).
				limit += 4
			}
			if n := testkit.Allocs(2000, func() { serve() }); n > float64(limit) {
				t.Errorf("a config request allocates %v times, want at most %d", n, limit)
			}
		})
	}
}

const requestPathAllocs = 4
