package pipeline

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/rendertest"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
)

// contentCopies maps each copy of rendertest.SharedIgn's large content (the piece
// holding it, as JSON less the closing quote) to how many bodies hold it.
func contentCopies(snap *Snapshot) map[*byte]int {
	out := map[*byte]int{}
	for _, p := range snap.pools {
		for _, r := range responses(p) {
			for _, piece := range r.Body.pieces {
				if string(piece) == `"data:,`+strings.Repeat("x", 4096) {
					out[&piece[0]]++
				}
			}
		}
	}
	return out
}

func TestContentsHeldOnce(t *testing.T) {
	a, b := rendertest.Result(t, "a", rendertest.SharedIgn), rendertest.Result(t, "b", rendertest.SharedIgn)
	first, err := BuildSnapshot(1, []*render.Result{a, b}, nil, render.NodeFiles{})
	if err != nil {
		t.Fatal(err)
	}
	copies := contentCopies(first)
	if len(copies) != 1 {
		t.Fatalf("the shared content is held %d times, want once", len(copies))
	}
	for _, n := range copies {
		if n < 2*len(responses(first.pools["a"])) {
			t.Fatalf("%d bodies hold the content, want every version of both pools", n)
		}
	}
	// A pool rendered anew, with the same content, shares the copy held.
	second, err := BuildSnapshotFrom(first, 2, []*render.Result{a, rendertest.Result(t, "b", rendertest.SharedIgn)}, nil, render.NodeFiles{})
	if err != nil {
		t.Fatal(err)
	}
	again := contentCopies(second)
	for ptr := range again {
		if copies[ptr] == 0 || len(again) != 1 {
			t.Fatalf("a new snapshot made another copy of unchanged content: %v then %v", copies, again)
		}
	}
}

// writerOnly is a ResponseWriter wrapper without WriteString, as
// middleware's are.
type writerOnly struct{ io.Writer }

func TestBodyWriteAllocatesNothing(t *testing.T) {
	snap, err := BuildSnapshot(1, []*render.Result{rendertest.Result(t, "a", rendertest.SharedIgn)}, nil, render.NodeFiles{Kubeconfig: []byte(strings.Repeat("k", 2048))})
	if err != nil {
		t.Fatal(err)
	}
	b := snap.pools["a"].Response(snap.pools["a"].result.Spec).Body
	if len(b.pieces) < 3 {
		t.Fatalf("%d pieces: the contents were not held out", len(b.pieces))
	}
	w := &writerOnly{io.Discard}
	if n := testkit.Allocs(100, func() { b.Send(w) }); n != 0 {
		t.Fatalf("writing a body allocates %v times", n)
	}
}

// Over real connections a body of pieces arrives whole and the connection
// stays open for the next request (net/http closes one whose body fell short
// of its Content-Length). On plain TCP it is handed to the connection
// (writev) and takes no write buffer; over TLS it is coalesced through one.
func TestPiecesOverConnections(t *testing.T) {
	snap, err := BuildSnapshot(1, []*render.Result{rendertest.Result(t, "worker", rendertest.SharedIgn, "a=b")}, nil, render.NodeFiles{Kubeconfig: []byte("apiVersion: v1\nkind: Config\n")})
	if err != nil {
		t.Fatal(err)
	}
	resp := snap.Pool("worker").Response(convert.V3_4)
	want := resp.Body
	// As the server writes a body: the header first, then the pieces.
	s := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Length"] = resp.Length
		http.NewResponseController(w).Flush()
		want.Send(w)
	})
	if len(want.pieces) < 3 {
		t.Fatalf("%d pieces: the contents were not held out", len(want.pieces))
	}
	for _, tc := range []struct {
		name    string
		srv     *httptest.Server
		buffers int // write buffers on the free list after the requests
	}{
		{"plain", httptest.NewServer(s), 0},
		{"tls", httptest.NewTLSServer(s), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.srv.Close()
			for len(writers) > 0 {
				<-writers
			}
			client := tc.srv.Client()
			for i := range 2 {
				reused := false
				trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused }}
				req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, tc.srv.URL+"/config/worker", nil)
				req.Header.Set("Accept", "application/vnd.coreos.ignition+json;version=3.4.0")
				req.Header.Set("Accept-Encoding", "identity") // as Ignition asks
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !bytes.Equal(got, want.Bytes()) {
					t.Fatalf("request %d: %d bytes (%v), want the body's %d", i, len(got), err, want.size)
				}
				if i == 1 && !reused {
					t.Error("the connection was not reused for the second request")
				}
			}
			tc.srv.Close() // waits for the handlers
			if len(writers) != tc.buffers {
				t.Errorf("%d write buffers taken, want %d", len(writers), tc.buffers)
			}
		})
	}
}
