package serve

import (
	"net/http"
	"time"
)

// instrument observes request duration under a fixed route label.
func (s *Server) instrument(route string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		obs := s.m.duration.WithLabelValues(route)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			next.ServeHTTP(w, r)
			obs.Observe(time.Since(start).Seconds())
		})
	}
}
