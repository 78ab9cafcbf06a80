package logthrottle

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// A line with a cause passes 20 times in 10 s; the first after says how
// many were dropped; lines without a cause are never held back; net/http's
// are keyed without their addresses.
func TestThrottle(t *testing.T) {
	var buf bytes.Buffer
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	h := New(slog.NewTextHandler(&buf, nil), clk)
	log := slog.New(h).With("component", "x")
	for range 25 {
		log.Warn("node waiting", "cause", "token-missing")
		log.Info("config request", "cause", "")
	}
	errLog := slog.NewLogLogger(h, slog.LevelWarn)
	for i := range 25 {
		errLog.Printf("http: TLS handshake error from 10.0.0.%d:%d: EOF", i, 40000+i)
	}
	out := buf.String()
	if n := strings.Count(out, "node waiting"); n != defaultBurst {
		t.Errorf("%d lines of one cause passed, want %d", n, defaultBurst)
	}
	if n := strings.Count(out, "config request"); n != 25 {
		t.Errorf("%d lines without a cause passed, want all 25", n)
	}
	if n := strings.Count(out, "TLS handshake error"); n != defaultBurst {
		t.Errorf("%d net/http lines passed, want %d", n, defaultBurst)
	}
	clk.SetTime(clk.Now().Add(defaultEvery))
	buf.Reset()
	log.Warn("node waiting", "cause", "token-missing")
	if !strings.Contains(buf.String(), "dropped=5") {
		t.Errorf("the line after the drops does not count them: %s", buf.String())
	}
}

// Past maxKeys causes, new causes share one window: memory stays bounded
// however many causes an outsider invents.
func TestThrottleKeysBounded(t *testing.T) {
	var buf bytes.Buffer
	h := New(slog.NewTextHandler(&buf, nil), clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	log := slog.New(h)
	for i := range maxKeys + 100 {
		log.Warn("refused", "cause", strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("y", i/26))
	}
	if n := len(h.keys); n > maxKeys+1 {
		t.Errorf("%d causes remembered, want at most %d", n, maxKeys+1)
	}
	if n := strings.Count(buf.String(), "refused"); n != maxKeys+defaultBurst {
		t.Errorf("%d lines passed, want %d: the first %d causes, then %d of the shared window", n, maxKeys+defaultBurst, maxKeys, defaultBurst)
	}
}
