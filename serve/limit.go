package serve

import (
	"fmt"
	"net/http"
)

// limit answers 503 (Ignition retries) once max config requests are being
// answered: bodies come from memory, so only slow readers pile up, and a
// bound keeps them from taking every goroutine and socket. Never 429: most
// Ignition platforms treat it as fatal. A max of zero or less is no bound.
func limit(max int, ref *refuser) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if max <= 0 {
			return next
		}
		sem := make(chan struct{}, max)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
				next.ServeHTTP(w, r)
			default:
				ref.refuse(w, r, CauseOverloaded, "-", fmt.Sprintf("overloaded: %d config requests in flight", max))
			}
		})
	}
}
