// Package logthrottle keeps the log lines anyone on the network can cause to a burst per cause and interval, counting what it drops.
package logthrottle

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Handler keeps the log lines that anyone on the network can cause —
// refusals (lines with a cause), net/http's own complaints, accept errors —
// to a burst per cause and interval. The first line after a quiet spell
// says how many of its cause were dropped before it, so nothing is lost
// but the repetition.
type Handler struct {
	next slog.Handler
	*throttleState
}

type throttleState struct {
	burst int
	every time.Duration
	clock clock.PassiveClock

	mu   sync.Mutex
	keys map[string]*window
}

// window is one cause's interval: the lines let through in it, and those
// dropped since the last one let through.
type window struct {
	start           time.Time
	passed, dropped int
}

// Defaults: a node waiting on a fixable cause logs once per cause, pool
// and client (serve), so 20 in 10 s is a score of nodes at once; the rest
// are counted, and listed in /status.
const (
	defaultBurst = 20
	defaultEvery = 10 * time.Second
	// maxKeys bounds the causes remembered; past it every new cause
	// shares one window.
	maxKeys = 1024
)

// New throttles next's lines: defaultBurst per cause every defaultEvery on c (nil: the
// wall clock). A line's cause is its "cause" attribute, or net/http's
// message without addresses and numbers; lines without one pass.
func New(next slog.Handler, c clock.PassiveClock) *Handler {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Handler{next: next, throttleState: &throttleState{burst: defaultBurst, every: defaultEvery, clock: c, keys: map[string]*window{}}}
}

func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(as), throttleState: h.throttleState}
}

func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), throttleState: h.throttleState}
}

func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	key := throttleKey(r)
	if key == "" {
		return h.next.Handle(ctx, r)
	}
	pass, dropped := h.admit(key)
	if !pass {
		return nil
	}
	if dropped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("dropped", dropped), slog.String("dropped_why", "more lines of this cause within "+h.every.String()))
	}
	return h.next.Handle(ctx, r)
}

// admit reports whether a line of key passes, and how many of its lines
// were dropped since the last one that passed.
func (s *throttleState) admit(key string) (bool, int) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.keys[key]
	if w == nil {
		if len(s.keys) >= maxKeys {
			key = "\x00other"
			w = s.keys[key]
		}
		if w == nil {
			w = &window{start: now}
			s.keys[key] = w
		}
	}
	if now.Sub(w.start) >= s.every {
		w.start, w.passed = now, 0
	}
	if w.passed >= s.burst {
		w.dropped++
		return false, 0
	}
	w.passed++
	d := w.dropped
	w.dropped = 0
	return true, d
}

// throttleKey is the cause of a line that may repeat at an outsider's
// will, or "" for a line that is not throttled.
func throttleKey(r slog.Record) string {
	if strings.HasPrefix(r.Message, "http: ") {
		return "http\x00" + normalise(r.Message)
	}
	var cause string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "cause" {
			cause = a.Value.String()
			return false
		}
		return true
	})
	if cause == "" {
		return ""
	}
	return r.Level.String() + "\x00" + r.Message + "\x00" + cause
}

// normalise is net/http's message without what varies line to line:
// addresses, ports and numbers become '#', and it is cut to 80 bytes.
func normalise(msg string) string {
	var b strings.Builder
	digits := false
	for _, c := range msg {
		if b.Len() >= 80 {
			break
		}
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(c)
	}
	return b.String()
}
