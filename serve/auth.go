package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-chi/chi/v5"
)

// auth requires "Authorization: Bearer <token>" when tokens are configured.
// Every configured token is compared, in constant time, so the time taken
// says nothing about which token (or how much of one) matched; several tokens
// allow rotation without a window where nodes are refused. A refused node is
// answered 511, which Ignition retries: adding its token lets it boot.
//
// tokens returns the accepted tokens (nil or none: no authentication);
// known maps the request's pool name to what a refusal may name (an
// unauthenticated request must not put its own strings in logs or /status).
func auth(tokens func() [][]byte, known func(pool string) string, ref *refuser) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if tokens == nil {
			return next
		}
		var retired tokenHistory
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			accepted := tokens()
			if len(accepted) == 0 {
				next.ServeHTTP(w, r)
				return
			}
			retired.observe(accepted)
			got, ok := bearer(r.Header.Get("Authorization"))
			match := 0
			for _, t := range accepted {
				match |= subtle.ConstantTimeCompare(got, t)
			}
			if ok && match == 1 {
				next.ServeHTTP(w, r)
				return
			}
			pool := known(chi.URLParam(r, "pool"))
			switch {
			case !ok:
				ref.refuse(w, r, CauseTokenMissing, pool, "unauthorized: /config/ needs Authorization: Bearer <token>")
			case retired.was(got):
				ref.refuse(w, r, CauseTokenRetired, pool, "unauthorized: the bearer token was rotated out")
			default:
				ref.refuse(w, r, CauseTokenRejected, pool, "unauthorized: the bearer token is not accepted")
			}
		})
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
	last    atomic.Pointer[[]byte] // first element of the token list last observed
	mu      sync.Mutex
	current map[[32]byte]bool
	past    [][32]byte
}

const tokenHistoryMax = 32

// observe records the configured list when it changed; tokens come from a
// cache that returns the same slice until the file changes.
func (h *tokenHistory) observe(tokens [][]byte) {
	if h.last.Load() == &tokens[0] {
		return // the request path: no lock
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last.Load() == &tokens[0] {
		return
	}
	h.last.Store(&tokens[0])
	next := make(map[[32]byte]bool, len(tokens))
	for _, t := range tokens {
		next[sha256.Sum256(t)] = true
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
