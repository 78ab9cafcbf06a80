package serve

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// instrument observes each request's duration in obs.
func instrument(obs prometheus.Observer) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			next.ServeHTTP(w, r)
			obs.Observe(time.Since(start).Seconds())
		})
	}
}
