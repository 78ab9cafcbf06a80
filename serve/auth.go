package serve

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// auth requires "Authorization: Bearer <token>" when tokens are configured.
// Every configured token is compared, in constant time, so the time taken
// says nothing about which token (or how much of one) matched; several tokens
// allow rotation without a window where nodes are refused.
func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Tokens == nil {
			next.ServeHTTP(w, r)
			return
		}
		tokens := s.cfg.Tokens()
		if len(tokens) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		got, ok := bearer(r.Header.Get("Authorization"))
		match := 0
		for _, t := range tokens {
			match |= subtle.ConstantTimeCompare(got, t)
		}
		if !ok || match != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcs"`)
			plain(w, http.StatusUnauthorized, "unauthorized: /config/ needs Authorization: Bearer <token>")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func bearer(h string) ([]byte, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, false
	}
	tok = strings.TrimSpace(tok)
	return []byte(tok), tok != ""
}
