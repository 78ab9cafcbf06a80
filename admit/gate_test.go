package admit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
)

func TestReadCapped(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 100<<10)
	for _, c := range []struct {
		name      string
		r         io.Reader
		max, hint int64
		want      int   // bytes read; -1: errTooLarge
		maxCap    int64 // the buffer's capacity at most
	}{
		{"declared and sent", bytes.NewReader(body), 1 << 20, int64(len(body)), len(body), int64(len(body)) + 1},
		{"undeclared", bytes.NewReader(body), 1 << 20, -1, len(body), 2 * int64(len(body))},
		{"one byte at a time", iotest.OneByteReader(bytes.NewReader(body)), 1 << 20, -1, len(body), 2 * int64(len(body))},
		{"8 MiB declared, 10 bytes sent", bytes.NewReader(body[:10]), 8 << 20, 8 << 20, 10, 16 << 10},
		{"at the cap", bytes.NewReader(body), int64(len(body)), -1, len(body), int64(len(body)) + 1},
		{"a byte over the cap", bytes.NewReader(body), int64(len(body)) - 1, -1, -1, 0},
		{"over the cap, declared under it", bytes.NewReader(body), int64(len(body)) - 1, 10, -1, 0},
		{"empty", strings.NewReader(""), 1 << 20, 0, 0, 16 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readCapped(c.r, c.max, c.hint)
			if c.want < 0 {
				if !errors.Is(err, errTooLarge) {
					t.Fatalf("err %v, want errTooLarge", err)
				}
				return
			}
			if err != nil || len(got) != c.want {
				t.Fatalf("read %d bytes, %v; want %d", len(got), err, c.want)
			}
			if int64(cap(got)) > c.maxCap {
				t.Errorf("buffer of %d bytes for %d read, want at most %d", cap(got), len(got), c.maxCap)
			}
		})
	}
	if _, err := readCapped(iotest.ErrReader(io.ErrUnexpectedEOF), 10, -1); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a failing body: %v", err)
	}
}

// The gate's slots: a second review from an address holding its share
// waits for a slot, gets the one released, and one that finds none within
// the wait is refused; a review whose client went stops waiting.
func TestGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
		g := newGate(2, time.Second)
		releaseA, err := g.enter(t.Context(), a)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		var releaseA2 func()
		go func() {
			var err error
			releaseA2, err = g.enter(t.Context(), a) // a's share is 1
			got <- err
		}()
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("a second slot for a lone address at once: %v", err)
		default:
		}
		releaseA()
		if err := <-got; err != nil {
			t.Fatalf("waiting for a released slot: %v", err)
		}
		// b may hold one while a holds one.
		releaseB, err := g.enter(t.Context(), b)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = g.enter(t.Context(), b)
		var busy *busyError
		if !errors.As(err, &busy) || !busy.full || time.Since(start) != time.Second {
			t.Errorf("with every slot taken: %v after %v, want busy after 1s", err, time.Since(start))
		}
		ctx, cancel := context.WithCancelCause(t.Context())
		go func() { _, err := g.enter(ctx, b); got <- err }()
		synctest.Wait()
		gone := errors.New("the client went")
		cancel(gone)
		if err := <-got; !errors.Is(err, gone) {
			t.Errorf("a client gone while waiting: %v", err)
		}
		releaseA2()
		releaseB()
		if r, err := g.enter(t.Context(), b); err != nil {
			t.Errorf("after every release: %v", err)
		} else {
			r()
		}
	})
}

// blockingBody is a request body that sends nothing until released.
type blockingBody struct {
	release chan struct{}
	r       io.Reader
}

func (b *blockingBody) Read(p []byte) (int, error) {
	<-b.release
	return b.r.Read(p)
}

// A review over the size cap by its Content-Length is refused before its
// body is read; one that finds no slot within the wait is a quick 503.
func TestMutateBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New(Config{MaxReviews: 2, QueueWait: time.Second, MaxBody: 1 << 20})
		w.SetCeiling(Ceiling{})
		req := httptest.NewRequest(http.MethodPost, MutatePath, iotest.ErrReader(errors.New("read")))
		req.ContentLength = 8 << 20
		rec := httptest.NewRecorder()
		w.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("8 MiB declared: %d, want 413", rec.Code)
		}

		body := reviewBody(admissionv1.Create, "alice", mcObject("99-kargs", kargs35), nil)
		slow := &blockingBody{release: make(chan struct{}), r: bytes.NewReader(body)}
		first := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			w.ServeHTTP(first, httptest.NewRequest(http.MethodPost, MutatePath, slow))
			close(done)
		}()
		synctest.Wait()
		start := time.Now()
		rec = httptest.NewRecorder()
		w.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(body)))
		if rec.Code != http.StatusServiceUnavailable || time.Since(start) != time.Second {
			t.Errorf("a second review from the same address: %d after %v, want 503 after 1s", rec.Code, time.Since(start))
		}
		close(slow.release)
		<-done
		if first.Code != http.StatusOK {
			t.Errorf("the first review: %d %s", first.Code, first.Body)
		}
		if s := statusOf(t, w); s.Reviews[outcomeBusy] != 1 || s.Reviews[outcomeBad] != 1 {
			t.Errorf("reviews %v, want one busy and one bad", s.Reviews)
		}
	})
}

// statusOf is the webhook's /status.
func statusOf(t *testing.T, w *Webhook) statusDoc {
	t.Helper()
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
	var doc statusDoc
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("/status %d: %v: %s", rec.Code, err, rec.Body)
	}
	return doc
}

// With Admin, /status and /metrics answer 401 to others; the probes and
// reviews do not ask.
func TestAdminOnly(t *testing.T) {
	reg := prometheus.NewRegistry()
	w := New(Config{Registry: reg, Gatherer: reg, Admin: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer ok" }})
	w.SetCeiling(Ceiling{})
	for _, c := range []struct {
		path, auth string
		want       int
	}{
		{"/status", "", 401}, {"/metrics", "", 401}, {"/status", "Bearer no", 401},
		{"/status", "Bearer ok", 200}, {"/metrics", "Bearer ok", 200}, {"/healthz", "", 200}, {"/readyz", "", 200},
	} {
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		w.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s with %q: %d, want %d", c.path, c.auth, rec.Code, c.want)
		}
	}
	if _, resp := post(t, w, reviewBody(admissionv1.Create, "alice", mcObject("99-kargs", kargs35), nil)); resp == nil || !resp.Allowed {
		t.Errorf("a review: %+v", resp)
	}
}
