package serve

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"
)

// Failed token attempts from one address beyond the burst wait their turn
// at failRate a second, while a node with an accepted token from that
// address is answered at once; another address is not held back. Guesses
// never show in /status as a pool's waiting nodes.
func TestTokenFailuresLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := worker(t, tokensCfg(Config{}))
		guess := func(from string) time.Duration {
			start := time.Now()
			if w := getFrom(t, s, from, "/config/worker", "Authorization", "Bearer guess"); w.Code != http.StatusNetworkAuthenticationRequired {
				t.Fatalf("a guess answered %d", w.Code)
			}
			return time.Since(start)
		}
		for i := range failBurst {
			if d := guess("192.0.2.1:1000"); d != 0 {
				t.Fatalf("guess %d, within the burst, held back %v", i, d)
			}
		}
		if d := guess("192.0.2.1:1000"); d != time.Second/failRate {
			t.Errorf("a guess past the burst held back %v, want %v", d, time.Second/failRate)
		}
		start := time.Now()
		if w := getFrom(t, s, "192.0.2.1:1001", "/config/worker", "Authorization", "Bearer new-token"); w.Code != http.StatusOK || time.Since(start) != 0 {
			t.Errorf("a node with its token from the guesser's address: %d after %v", w.Code, time.Since(start))
		}
		if d := guess("198.51.100.7:1000"); d != 0 {
			t.Errorf("another address's first failure held back %v", d)
		}
		// Guesses sent at once wait in turn, failWaitMax at most.
		f, now, last := &failures{by: map[netip.Addr]*rate.Limiter{}}, time.Now(), time.Duration(0)
		for range failBurst + 2*failRate*failWaitMax/time.Second + 5 {
			last = f.delay(netip.MustParseAddr("192.0.2.9"), now)
		}
		if last != failWaitMax {
			t.Errorf("a guess deep past the burst held back %v, want %v", last, failWaitMax)
		}
		if st := s.Status(); len(st.Waiting) != 0 {
			t.Errorf("guesses listed as waiting nodes: %+v", st.Waiting)
		}
	})
}

// getFrom is get with the request's client address set.
func getFrom(t *testing.T, s *Server, remote, target string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.RemoteAddr = remote
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w
}

// A token's entropy is its length times the bits of the smallest common
// alphabet holding its characters.
func TestTokenBits(t *testing.T) {
	for _, tc := range []struct {
		tok  string
		bits float64
	}{
		{"", 0},
		{"x", 4.70},
		{"0123456789abcdef0123456789abcdef", 128},
		{"00000000000000000000000000000000000000", 38 * 3.321928094887362},
		{"Zq8wX3kP9mL2vN7rT4yB", 20 * 5.954196310386876},
	} {
		if got := TokenBits([]byte(tc.tok)); got < tc.bits-0.01 || got > tc.bits+0.01 {
			t.Errorf("%q: %.2f bits, want %.2f", tc.tok, got, tc.bits)
		}
	}
}
