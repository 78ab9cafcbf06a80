package serve

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/ignition-mcs/mcs/skewgate"
)

// TestAnswer: Answer gives what the handler writes, status, headers and
// body, for configs, stubs, refusals and unknown pools (500: see contract.go).
func TestAnswer(t *testing.T) {
	s := newTestServer(t, Config{Gate: skewgate.New(nil, nil)}, result(t, "worker", luksIgn))
	cases := []struct {
		name, pool, accept, ua string
		code                   int
	}{
		{"config", "worker", hdr36, "Ignition/v2.27.0", http.StatusOK},
		{"stub", "worker", hdr32, "Ignition/v2.9.0", http.StatusOK},
		{"not acceptable", "worker", "application/vnd.coreos.ignition+json;version=4.0.0", "", http.StatusNotAcceptable},
		{"unknown pool", "infra", hdr36, "", http.StatusInternalServerError},
		{"a pool name to escape", "../metrics", hdr36, "", http.StatusInternalServerError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{"Accept": {c.accept}, "User-Agent": {c.ua}}
			code, hdr, body := s.Answer(context.Background(), c.pool, h)
			want := get(t, s, "GET", "/config/"+c.pool, "Accept", c.accept, "User-Agent", c.ua)
			if c.name == "a pool name to escape" {
				want = get(t, s, "GET", "/config/..%2Fmetrics", "Accept", c.accept)
			}
			if code != c.code || code != want.Code || !bytes.Equal(body, want.Body.Bytes()) {
				t.Fatalf("Answer: %d %q; handler: %d %q", code, body, want.Code, want.Body)
			}
			if hdr.Get("Content-Type") != want.Header().Get("Content-Type") || hdr.Get("X-Mcs-Skew") != want.Header().Get("X-Mcs-Skew") {
				t.Fatalf("headers %v, handler's %v", hdr, want.Header())
			}
		})
	}
}
