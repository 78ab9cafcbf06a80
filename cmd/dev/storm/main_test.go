package main

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// smokeServer serves responses like `storm bare` does, on loopback, with
// the fixture's certificate; it returns the target the nodes fetch from.
func smokeServer(t *testing.T, f *fixture, o options, bodies [][]byte) *target {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := listenBare("127.0.0.1:0", pair)
	if err != nil {
		t.Fatal(err)
	}
	var rs []response
	for i, e := range o.eras {
		rs = append(rs, response{Path: "/config/" + o.pool, Accept: e.accept, Header: http.Header{"Content-Type": {"application/json"}}, Body: bodies[i]})
	}
	srv := &http.Server{Handler: bareHandler(rs, f.token)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &target{name: "bare", addr: ln.Addr().String()}
}

// A small storm against the bare server: every node connects from its
// source address, shakes hands, is answered its era's bytes and checks
// them; a server writing other bytes fails every node.
func TestSmallStorm(t *testing.T) {
	o, err := parseFlags([]string{"-n", "40", "-inflight", "8", "-addrs", "3", "-pool", "worker", "-timeout", "30s"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFixture(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	bodies := make([][]byte, len(o.eras))
	for i, e := range o.eras {
		bodies[i] = []byte(strings.Repeat(`{"ignition":{"version":"`+e.version+`"}}`, 1000+i))
	}
	tgt := smokeServer(t, f, o, bodies)
	for _, c := range []struct {
		name     string
		want     [][]byte
		failures int
	}{
		{"same bytes", bodies, 0},
		{"other bytes", append([][]byte{[]byte("x")}, bodies[1:]...), 6}, // nodes 0, 7, … of 40 ask era 0
	} {
		t.Run(c.name, func(t *testing.T) {
			tgt.want = c.want
			s, err := newStorm(o, f, tgt)
			if err != nil {
				t.Fatal(err)
			}
			out := s.run(context.Background())
			if out.failures != c.failures || len(out.latency) != o.nodes-c.failures {
				t.Fatalf("%d failed, %d served, want %d failed; first error %v", out.failures, len(out.latency), c.failures, out.firstErr)
			}
		})
	}
}

// A node without the pool's token is refused, and counted as a failure.
func TestStormWrongToken(t *testing.T) {
	o, err := parseFlags([]string{"-n", "5", "-inflight", "5", "-addrs", "2", "-eras", "v2.27.0"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFixture(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	tgt := smokeServer(t, f, o, [][]byte{[]byte("{}")})
	f.token = "not-the-token"
	s, err := newStorm(o, f, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if out := s.run(context.Background()); out.failures != 5 || !strings.Contains(out.firstErr.Error(), "401") {
		t.Fatalf("%d failures (%v), want 5 refused", out.failures, out.firstErr)
	}
}

// A 5xx answer is retried, as Ignition retries it, and the node is served.
func TestStormRetries(t *testing.T) {
	o, err := parseFlags([]string{"-n", "6", "-inflight", "3", "-addrs", "2", "-eras", "v2.27.0"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFixture(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"ignition":{"version":"3.6.0"}}`)
	tgt := &target{name: "flaky", want: [][]byte{body}}
	pair, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := listenBare("127.0.0.1:0", pair)
	if err != nil {
		t.Fatal(err)
	}
	var answered atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answered.Add(1) <= 4 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		w.Write(body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	tgt.addr = ln.Addr().String()
	s, err := newStorm(o, f, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if out := s.run(context.Background()); out.failures != 0 || out.retries != 4 || len(out.latency) != 6 {
		t.Fatalf("%d failed (%v), %d retried, %d served; want 0, 4, 6", out.failures, out.firstErr, out.retries, len(out.latency))
	}
}

func TestGoals(t *testing.T) {
	o := options{goalTime: 10 * time.Second, goalRatio: 1.1, goalRSSMiB: 200}
	for _, c := range []struct {
		name   string
		s      summary
		ratios []float64
		want   []string
	}{
		{"met", summary{took: []float64{3, 4}, peakMiB: 90}, []float64{1.0, 1.2, 1.05}, nil},
		{"slow storm", summary{took: []float64{3, 11}, peakMiB: 90}, []float64{1}, []string{"storm 2 took 11.00 s"}},
		{"failures", summary{took: []float64{3}, failures: 2, peakMiB: 90}, []float64{1}, []string{"2 nodes were not served"}},
		{"ratio", summary{took: []float64{3}, peakMiB: 90}, []float64{1.2, 1.15, 1.0}, []string{"median completion 1.150×"}},
		{"rss", summary{took: []float64{3}, peakMiB: 200}, []float64{1}, []string{"peak RSS 200 MiB"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := goals(o, c.s, c.ratios)
			if len(got) != len(c.want) {
				t.Fatalf("missed %q, want %q", got, c.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], c.want[i]) {
					t.Errorf("missed %q, want %q", got[i], c.want[i])
				}
			}
		})
	}
}

// The fixture's files are what mcs and the bare server are started with.
func TestFixture(t *testing.T) {
	o := options{pool: "worker"}
	dir := t.TempDir()
	f, err := newFixture(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(f.certFile, f.keyFile); err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "tokens"))
	if err != nil || string(tok) != f.token+" worker\n" {
		t.Fatalf("token file %q (%v)", tok, err)
	}
}
