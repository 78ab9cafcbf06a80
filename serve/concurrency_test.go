package serve

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
)

// generations builds n snapshots of one pool, generation g serving
// /etc/generation = g, and maps every body they can serve to its generation.
func generations(tb testing.TB, n int) ([]*Snapshot, map[string]int) {
	tb.Helper()
	snaps := make([]*Snapshot, n)
	gen := map[string]int{}
	for g := range n {
		ign := fmt.Sprintf(`{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/generation","overwrite":true,"contents":{"source":"data:,%d"}}]}}`, g)
		snap, err := BuildSnapshot(uint64(g+1), []*render.Result{result(tb, "worker", ign)}, nil, NodeFiles{})
		if err != nil {
			tb.Fatal(err)
		}
		snaps[g] = snap
		for _, r := range responses(snap.pools["worker"]) {
			gen[string(r.body.bytes())] = g
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

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkRequestPath measures the handler alone: routing, negotiation,
// selection, metrics, logging to a discarding handler, and the write.
func BenchmarkRequestPath(b *testing.B) {
	s := newTestServer(b, Config{}, result(b, "worker", plainIgn))
	for _, accept := range []string{hdr36, hdr34, hdrSpec2} {
		b.Run(accept[:45], func(b *testing.B) {
			req := httptest.NewRequest("GET", "/config/worker", nil)
			req.Header.Set("Accept", accept)
			req.Header.Set("User-Agent", "Ignition/v2.27.0")
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				s.ServeHTTP(w, req)
			}
		})
	}
}
