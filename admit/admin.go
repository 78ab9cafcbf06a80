package admit

import "net/http"

// adminOnly answers 401 to a request allowed does not allow (nil: every
// request passes).
func adminOnly(allowed func(*http.Request) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if allowed == nil {
			return next
		}
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if !allowed(r) {
				rw.Header().Set("WWW-Authenticate", `Bearer realm="mcs admit"`)
				http.Error(rw, "unauthorized: /status and /metrics need a bearer token", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(rw, r)
		})
	}
}
