package serve

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/rendertest"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/netlimit"
)

// sharedIgn holds a file large enough to be held out of encoding.
var sharedIgn = rendertest.SharedIgn

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
