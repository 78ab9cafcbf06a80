package httpserve

import "net/http"

// refuseBodies answers a request that carries a body 400 and closes its
// connection, but for a node's first-boot failure report (POST
// /v1/node-failure) framed by Content-Length alone, whose size the handler
// bounds. No other route takes one; and a request with both
// Content-Length and Transfer-Encoding, which net/http reads by the latter
// (dropping the former before any handler sees it), is how a request is
// smuggled past a proxy that trusts Content-Length (RFC 9112 §6.1 says to
// close such a connection). Closing it means whatever follows the body is
// never read as a request.
func refuseBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		report := r.Method == http.MethodPost && r.URL.Path == "/v1/node-failure"
		if len(r.TransferEncoding) == 0 && (r.ContentLength <= 0 || report) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		msg := "bad request: mcs takes no request bodies"
		if report {
			msg = "bad request: send the report with a Content-Length, not chunked"
		}
		http.Error(w, msg, http.StatusBadRequest)
	})
}
