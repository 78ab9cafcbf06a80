package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"math"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/ignition-mcs/mcs/serve/status"
	"golang.org/x/time/rate"
)

// Token is a bearer token and the pools it may fetch; no pools means every
// pool, and /status and /metrics (an admin's token).
type Token struct {
	Secret []byte
	Pools  []string
}

func (t Token) allows(pool string) bool {
	if len(t.Pools) == 0 {
		return true
	}
	for _, p := range t.Pools {
		if p == pool {
			return true
		}
	}
	return false
}

const tokenRejected = "unauthorized: the bearer token is not accepted"

// match is the token got is, or nil. Every configured token is compared,
// as SHA-256 digests, in constant time: the time taken says nothing about
// which token matched, how much of one, nor (subtle.ConstantTimeCompare
// returns at once on a length mismatch) how long the tokens are.
func match(accepted []Token, got []byte) *Token {
	var found *Token
	d := sha256.Sum256(got)
	for i := range accepted {
		td := sha256.Sum256(accepted[i].Secret)
		if subtle.ConstantTimeCompare(d[:], td[:]) == 1 {
			found = &accepted[i]
		}
	}
	return found
}

// auth requires "Authorization: Bearer <token>" when tokens are configured,
// and a token whose pools include the one asked for; several tokens allow
// rotation without a window where nodes are refused. A refused node is
// answered 511, which Ignition retries: adding its token (or its pool to
// the token) lets it boot.
//
// tokens returns the accepted tokens (nil: no authentication; none: every
// request refused, as with pool tokens before the first is made);
// known maps the request's pool name to what a refusal may name (an
// unauthenticated request must not put its own strings in logs or /status).
func auth(tokens func() []Token, known func(pool string) string, ref *refuser) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if tokens == nil {
			return next
		}
		var retired tokenHistory
		fails := &failures{by: map[netip.Addr]*rate.Limiter{}}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			accepted := tokens()
			if len(accepted) > 0 {
				retired.observe(accepted)
			}
			got, ok := bearer(r.Header.Get("Authorization"))
			name := chi.URLParam(r, "pool")
			tok := match(accepted, got)
			if ok && tok != nil && tok.allows(name) {
				next.ServeHTTP(w, r)
				return
			}
			if tok == nil {
				fails.wait(r.Context(), remoteAddr(r))
			}
			pool := known(name)
			switch {
			case !ok:
				ref.refuse(w, r, status.CauseTokenMissing, pool, "unauthorized: /config/ needs Authorization: Bearer <token>")
			case tok != nil:
				ref.refuse(w, r, status.CauseTokenOtherPool, pool, "unauthorized: the bearer token is not accepted for this pool")
			case retired.was(got):
				// Told to the admin only: to the client, that a token
				// was once valid is a hint worth having.
				ref.refuseAs(w, r, status.CauseTokenRetired, pool, "unauthorized: the bearer token was rotated out", status.CauseTokenRejected, tokenRejected)
			default:
				ref.refuse(w, r, status.CauseTokenRejected, pool, tokenRejected)
			}
		})
	}
}

// Failed token attempts from one address beyond failBurst are answered at
// failRate a second, each waiting its turn (failWaitMax at most); a request
// with an accepted token is never held back. A node behind a guesser's
// address still boots, while a guesser gets failRate answers a second for
// each request slot its address may hold (netlimit.Slots).
const (
	failRate    = 2
	failBurst   = 20
	failWaitMax = 5 * time.Second
	failTracked = 4096 // addresses remembered; past it all are forgotten
)

// failures are the failed token attempts of each address.
type failures struct {
	mu sync.Mutex
	by map[netip.Addr]*rate.Limiter
}

// wait holds a failed attempt from addr until its turn, or ctx ends.
func (f *failures) wait(ctx context.Context, addr netip.Addr) {
	d := f.delay(addr, time.Now())
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (f *failures) delay(addr netip.Addr, now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.by[addr]
	if l == nil {
		if len(f.by) >= failTracked {
			clear(f.by)
		}
		l = rate.NewLimiter(failRate, failBurst)
		f.by[addr] = l
	}
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d <= failWaitMax {
		return d
	}
	r.CancelAt(now)
	return failWaitMax
}

// MinTokenBits is the entropy a bearer token must have at least.
const MinTokenBits = 128

// TokenBits estimates the entropy of a token drawn at random from the
// characters it uses: its length times log2 of the size of the smallest
// common alphabet holding them (hex, digits, letters and digits,
// printable ASCII).
func TokenBits(tok []byte) float64 {
	var lower, upper, digit, other, hex bool
	hex = true
	for _, c := range tok {
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
			hex = hex && c <= 'f'
		case c >= 'A' && c <= 'Z':
			upper = true
			hex = hex && c <= 'F'
		case c >= '0' && c <= '9':
			digit = true
		default:
			other, hex = true, false
		}
	}
	size := 0
	switch {
	case hex && (lower || upper):
		size = 16
	default:
		for _, s := range []struct {
			has bool
			n   int
		}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 32}} {
			if s.has {
				size += s.n
			}
		}
	}
	if size < 2 {
		return 0
	}
	return float64(len(tok)) * math.Log2(float64(size))
}

// adminAuth guards /status and /metrics when tokens are configured: they
// name pools, node addresses and client versions, so they need a token for
// every pool (a line of --auth-token-file without pools); a node's
// pool-scoped token is refused. Prometheus and people get 401, not the
// nodes' 511.
func adminAuth(tokens func() []Token) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if tokens == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			accepted := tokens()
			got, ok := bearer(r.Header.Get("Authorization"))
			if tok := match(accepted, got); ok && tok != nil && len(tok.Pools) == 0 {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcs"`)
			plain(w, http.StatusUnauthorized, "unauthorized: "+r.URL.Path+" needs Authorization: Bearer <token> with a token for every pool")
		})
	}
}

// reportAuth is what a first-boot failure report needs when tokens are
// configured: a token that fetches its pool, as /config/<pool> takes (the
// pool's own or one for every pool). nil without tokens.
func reportAuth(tokens func() []Token) func(*http.Request, string) error {
	if tokens == nil {
		return nil
	}
	return func(r *http.Request, pool string) error {
		got, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			return errors.New("unauthorized: a report needs Authorization: Bearer <token>, a token that fetches the pool's config")
		}
		tok := match(tokens(), got)
		switch {
		case tok == nil:
			return errors.New(tokenRejected)
		case !tok.allows(pool):
			return errors.New("unauthorized: the bearer token is not accepted for this pool")
		}
		return nil
	}
}

func bearer(h string) ([]byte, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, false
	}
	tok = strings.TrimSpace(tok)
	return []byte(tok), tok != ""
}

// tokenHistory remembers digests of tokens once accepted, so a node still
// carrying a rotated-out token is told so. Only SHA-256 digests are kept;
// the list is bounded, oldest forgotten first.
type tokenHistory struct {
	last    atomic.Pointer[[][]byte] // a copy of the secrets last observed
	mu      sync.Mutex
	current map[[32]byte]bool
	past    [][32]byte
}

const tokenHistoryMax = 32

// observe records the configured list when its secrets changed.
func (h *tokenHistory) observe(tokens []Token) {
	if h.same(tokens) {
		return // the request path: no lock
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.same(tokens) {
		return
	}
	last := make([][]byte, len(tokens))
	for i, t := range tokens {
		last[i] = slices.Clone(t.Secret)
	}
	h.last.Store(&last)
	next := make(map[[32]byte]bool, len(tokens))
	for _, t := range tokens {
		next[sha256.Sum256(t.Secret)] = true
	}
	for d := range h.current {
		if !next[d] {
			h.past = append(h.past, d)
		}
	}
	if len(h.past) > tokenHistoryMax {
		h.past = h.past[len(h.past)-tokenHistoryMax:]
	}
	h.current = next
}

// same reports whether tokens' secrets are, one by one, those last observed.
func (h *tokenHistory) same(tokens []Token) bool {
	last := h.last.Load()
	return last != nil && slices.EqualFunc(*last, tokens, func(s []byte, t Token) bool { return bytes.Equal(s, t.Secret) })
}

// was reports whether tok is a token that used to be accepted.
func (h *tokenHistory) was(tok []byte) bool {
	d := sha256.Sum256(tok)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.past {
		if subtle.ConstantTimeCompare(d[:], p[:]) == 1 {
			return true
		}
	}
	return false
}
