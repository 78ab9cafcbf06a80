package serve

import (
	"fmt"
	"net/http"
)

// limit answers 503 (Ignition retries) once MaxInFlight config requests are
// being answered: bodies come from memory, so only slow readers pile up, and
// a bound keeps them from taking every goroutine and socket. Never 429: most
// Ignition platforms treat it as fatal.
func (s *Server) limit(next http.Handler) http.Handler {
	if s.cfg.MaxInFlight <= 0 {
		return next
	}
	sem := make(chan struct{}, s.cfg.MaxInFlight)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			next.ServeHTTP(w, r)
		default:
			s.refuse(w, r, CauseOverloaded, "-", fmt.Sprintf("overloaded: %d config requests in flight", s.cfg.MaxInFlight))
		}
	})
}
