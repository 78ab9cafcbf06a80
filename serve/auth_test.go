package serve

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A rotated-out token is told apart from a wrong one in the log and
// /status, for the admin; the client gets exactly what a wrong token gets.
func TestRetiredTokenToldOnlyToTheAdmin(t *testing.T) {
	var logs bytes.Buffer
	s := worker(t, tokensCfg(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	if w := get(t, s, "GET", "/config/worker", "Authorization", "Bearer old-token"); w.Code != 200 {
		t.Fatalf("old token before rotation: %d", w.Code)
	}
	retired := get(t, s, "GET", "/config/worker", "Authorization", "Bearer old-token")
	wrong := get(t, s, "GET", "/config/worker", "Authorization", "Bearer guess")
	if retired.Code != wrong.Code || retired.Body.String() != wrong.Body.String() || retired.Header().Get("WWW-Authenticate") != wrong.Header().Get("WWW-Authenticate") {
		t.Errorf("a retired token is answered %d %q, a wrong one %d %q: a guesser can tell them apart",
			retired.Code, retired.Body, wrong.Code, wrong.Body)
	}
	if !strings.Contains(logs.String(), "cause=token-retired") || !strings.Contains(logs.String(), "rotated out") {
		t.Errorf("the log does not say the token was rotated out:\n%s", logs.String())
	}
	if w := s.Status().Waiting; len(w) != 0 {
		t.Errorf("requests without an accepted token listed as waiting nodes: %+v", w)
	}
}

// Tokens are compared as digests: a token matches whatever the lengths of
// the others, and a prefix or an extension of one does not.
func TestMatchDigests(t *testing.T) {
	accepted := []Token{{Secret: []byte("short")}, {Secret: []byte(strings.Repeat("long-token-", 20))}}
	for got, want := range map[string]int{
		"short": 0, strings.Repeat("long-token-", 20): 1,
		"shor": -1, "short!": -1, "": -1, strings.Repeat("long-token-", 19): -1,
	} {
		m := match(accepted, []byte(got))
		switch {
		case want < 0 && m != nil:
			t.Errorf("%.20q matched %q", got, m.Secret)
		case want >= 0 && m != &accepted[want]:
			t.Errorf("%.20q did not match token %d", got, want)
		}
	}
}

// The header caches keep no key longer than cacheKeyMax and at most
// acceptCacheMax keys: a flood of distinct 60 KB headers is answered
// without being remembered.
func TestHeaderCachesBoundedInBytes(t *testing.T) {
	s := worker(t, Config{})
	for i := range 2 * acceptCacheMax {
		long := strings.Repeat("x", 60000) + strconv.Itoa(i)
		if w := get(t, s, "GET", "/config/worker", "Accept", long, "User-Agent", long); w.Code != 200 {
			t.Fatalf("%d", w.Code)
		}
		short := strconv.Itoa(i)
		get(t, s, "GET", "/config/worker", "Accept", short, "User-Agent", short)
	}
	held := 0
	for _, m := range []*sync.Map{&s.accepts.m, &s.clients.m} {
		m.Range(func(k, _ any) bool {
			held += len(k.(string))
			if len(k.(string)) > cacheKeyMax {
				t.Errorf("a %d-byte key is cached", len(k.(string)))
			}
			return true
		})
	}
	if s.accepts.n.Load() > acceptCacheMax || s.clients.n.Load() > acceptCacheMax {
		t.Errorf("%d Accept and %d User-Agent keys cached, over %d", s.accepts.n.Load(), s.clients.n.Load(), acceptCacheMax)
	}
	if held > 2*acceptCacheMax*cacheKeyMax {
		t.Errorf("%d bytes of keys held", held)
	}
}
