package serve

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/netlimit"
	"github.com/ignition-mcs/mcs/render"
)

// sharedIgn holds a file large enough to be held out of encoding.
var sharedIgn = `{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/big","contents":{"source":"data:,` +
	strings.Repeat("x", 4096) + `"}}]}}`

// contentCopies maps each copy of sharedIgn's large content (the piece
// holding it, as JSON less the closing quote) to how many bodies hold it.
func contentCopies(snap *Snapshot) map[*byte]int {
	out := map[*byte]int{}
	for _, p := range snap.pools {
		for _, r := range responses(p) {
			for _, piece := range r.body.pieces {
				if string(piece) == `"data:,`+strings.Repeat("x", 4096) {
					out[&piece[0]]++
				}
			}
		}
	}
	return out
}

func TestContentsHeldOnce(t *testing.T) {
	a, b := result(t, "a", sharedIgn), result(t, "b", sharedIgn)
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
	second, err := BuildSnapshotFrom(first, 2, []*render.Result{a, result(t, "b", sharedIgn)}, nil, render.NodeFiles{})
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

func TestSegmentedBodiesServed(t *testing.T) {
	s := newTestServer(t, Config{}, result(t, "worker", sharedIgn))
	plain := get(t, s, http.MethodGet, "/config/worker", "Accept", "application/vnd.coreos.ignition+json;version=3.4.0")
	body := plain.Body.Bytes()
	if !bytes.Contains(body, []byte(strings.Repeat("x", 4096))) || bytes.Contains(body, []byte("mcsph-")) {
		t.Fatalf("served %.200s", body)
	}
	sum := sha256.Sum256(body)
	if want := `"` + hex.EncodeToString(sum[:16]) + `"`; plain.Header().Get("ETag") != want {
		t.Fatalf("ETag %s, want %s (the body's hash)", plain.Header().Get("ETag"), want)
	}
	if plain.Header().Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Fatalf("Content-Length %s for %d bytes", plain.Header().Get("Content-Length"), len(body))
	}
	gz := get(t, s, http.MethodGet, "/config/worker", "Accept", "application/vnd.coreos.ignition+json;version=3.4.0", "Accept-Encoding", "gzip")
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	if unzipped, _ := io.ReadAll(zr); !bytes.Equal(unzipped, body) {
		t.Fatal("gzip body differs")
	}
	head := get(t, s, http.MethodHead, "/config/worker", "Accept", "application/vnd.coreos.ignition+json;version=3.4.0")
	if head.Body.Len() != 0 || head.Header().Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Fatalf("HEAD: %d bytes, Content-Length %s", head.Body.Len(), head.Header().Get("Content-Length"))
	}
	nm := get(t, s, http.MethodGet, "/config/worker", "Accept", "application/vnd.coreos.ignition+json;version=3.4.0", "If-None-Match", plain.Header().Get("ETag"))
	if nm.Code != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", nm.Code)
	}
}

// writerOnly is a ResponseWriter wrapper without WriteString, as
// middleware's are.
type writerOnly struct{ io.Writer }

func TestBodyWriteAllocatesNothing(t *testing.T) {
	snap, err := BuildSnapshot(1, []*render.Result{result(t, "a", sharedIgn)}, nil, render.NodeFiles{Kubeconfig: []byte(strings.Repeat("k", 2048))})
	if err != nil {
		t.Fatal(err)
	}
	b := snap.pools["a"].response(snap.pools["a"].result.Spec).body
	if len(b.pieces) < 3 {
		t.Fatalf("%d pieces: the contents were not held out", len(b.pieces))
	}
	w := &writerOnly{io.Discard}
	if n := testing.AllocsPerRun(100, func() { b.writeTo(w) }); n != 0 {
		t.Fatalf("writing a body allocates %v times", n)
	}
}

// Over real connections a body of pieces arrives whole and the connection
// stays open for the next request (net/http closes one whose body fell short
// of its Content-Length). On plain TCP it is handed to the connection
// (writev) and takes no write buffer; over TLS it is coalesced through one.
func TestPiecesOverConnections(t *testing.T) {
	var logs bytes.Buffer
	s := newTestServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, result(t, "worker", sharedIgn, "a=b"))
	want := s.Snapshot().pools["worker"].response(convert.V3_4).body
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
			logs.Reset()
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
				if err != nil || !bytes.Equal(got, want.bytes()) {
					t.Fatalf("request %d: %d bytes (%v), want the body's %d", i, len(got), err, want.size)
				}
				if i == 1 && !reused {
					t.Error("the connection was not reused for the second request")
				}
			}
			tc.srv.Close() // waits for the handlers, and their log lines
			if len(writers) != tc.buffers {
				t.Errorf("%d write buffers taken, want %d", len(writers), tc.buffers)
			}
			if n := strings.Count(logs.String(), "bytes="+strconv.Itoa(want.size)); n != 2 {
				t.Errorf("%d of 2 log lines count the body's %d bytes:\n%s", n, want.size, logs.String())
			}
		})
	}
}

// recordingConn records what the handler asks of a connection that can
// hold a header back, and writes everything through at once.
type recordingConn struct {
	net.Conn
	mu     *sync.Mutex
	events *[]string
}

func (c recordingConn) add(e string) {
	c.mu.Lock()
	*c.events = append(*c.events, e)
	c.mu.Unlock()
}

func (c recordingConn) HoldHeader()     { c.add("hold") }
func (c recordingConn) SendHeld() error { c.add("send-held"); return nil }

func (c recordingConn) Write(b []byte) (int, error) {
	c.add("write")
	return c.Conn.Write(b)
}

func (c recordingConn) ReadFrom(r io.Reader) (int64, error) {
	_, ok := r.(netlimit.Prefixer)
	c.add(fmt.Sprintf("read-from prefix=%v", ok))
	return c.Conn.(io.ReaderFrom).ReadFrom(r)
}

type recordingListener struct {
	net.Listener
	conn func(net.Conn) net.Conn
}

func (l recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.conn(c), nil
}

// A body of pieces asks a connection found through ConnContext to hold
// its header back, hands the body to it with room for the header, and has
// it send what is still held after; a body of one piece asks nothing.
func TestHeaderHeldForBody(t *testing.T) {
	s := newTestServer(t, Config{}, result(t, "worker", sharedIgn, "a=b"))
	var mu sync.Mutex
	var events []string
	srv := httptest.NewUnstartedServer(s)
	srv.Listener = recordingListener{srv.Listener, func(c net.Conn) net.Conn { return recordingConn{c, &mu, &events} }}
	srv.Config.ConnContext = ConnContext
	srv.Start()
	defer srv.Close()
	for _, tc := range []struct {
		target string
		want   string
	}{
		{"/config/worker", "hold write read-from prefix=true send-held"},
		{"/config/worker?pretty=1", ""}, // "": nothing held (a hold comes before the writes the client read)
	} {
		mu.Lock()
		events = nil
		mu.Unlock()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.target, nil)
		req.Header.Set("Accept", "application/vnd.coreos.ignition+json;version=3.4.0")
		req.Header.Set("Accept-Encoding", "identity") // as Ignition asks
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		var got string
		// The handler's last calls on the connection may come after the
		// client has read the body: wait for them on the real server.
		testkit.Eventually(t, 10*time.Second, tc.target, func() error {
			mu.Lock()
			got = strings.Join(events, " ")
			mu.Unlock()
			if got == tc.want || tc.want == "" {
				return nil
			}
			return fmt.Errorf("asked %q", got)
		})
		if tc.want == "" && strings.Contains(got, "hold") || tc.want != "" && got != tc.want {
			t.Errorf("%s: the connection was asked %q, want %q", tc.target, got, tc.want)
		}
	}
}
