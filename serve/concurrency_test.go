package serve

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/render"
)

// Reloads every few milliseconds while clients fetch: no request fails, and
// every body is exactly one generation's precomputed body.
func TestReloadUnderLoad(t *testing.T) {
	const gens = 6
	snaps := make([]*Snapshot, gens)
	valid := map[string]bool{}
	for g := range gens {
		ign := fmt.Sprintf(`{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/generation","overwrite":true,"contents":{"source":"data:,%d"}}]}}`, g)
		snap, err := BuildSnapshot(uint64(g+1), []*render.Result{result(t, "worker", ign)}, nil, NodeFiles{})
		if err != nil {
			t.Fatal(err)
		}
		snaps[g] = snap
		for _, r := range snap.pools["worker"].responses {
			valid[string(r.body)] = true
		}
	}
	s := New(Config{})
	s.Swap(snaps[0])
	ts := httptest.NewServer(s)
	defer ts.Close()

	stop := make(chan struct{})
	var swaps atomic.Int64
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			s.Swap(snaps[i%gens])
			swaps.Add(1)
		}
	}()
	var wg sync.WaitGroup
	var requests, failures atomic.Int64
	deadline := time.Now().Add(1500 * time.Millisecond)
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			accept := []string{hdr36, hdr34, hdr32, hdrSpec2}[c%4]
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest("GET", ts.URL+"/config/worker", nil)
				req.Header.Set("Accept", accept)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					failures.Add(1)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				requests.Add(1)
				if resp.StatusCode != 200 || !valid[string(body)] {
					failures.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if failures.Load() != 0 {
		t.Fatalf("%d of %d requests failed or got a body of no generation", failures.Load(), requests.Load())
	}
	if swaps.Load() < 50 || requests.Load() < 100 {
		t.Fatalf("too little happened: %d swaps, %d requests", swaps.Load(), requests.Load())
	}
	t.Logf("%d requests across %d swaps, all whole", requests.Load(), swaps.Load())
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
