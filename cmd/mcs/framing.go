package main

import "net/http"

// refuseBodies answers a request that carries a body 400 and closes its
// connection. No route of mcs takes one; and a request with both
// Content-Length and Transfer-Encoding, which net/http reads by the latter
// (dropping the former before any handler sees it), is how a request is
// smuggled past a proxy that trusts Content-Length (RFC 9112 §6.1 says to
// close such a connection). Closing it means whatever follows the body is
// never read as a request.
func refuseBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TransferEncoding) == 0 && r.ContentLength <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		http.Error(w, "bad request: mcs takes no request bodies", http.StatusBadRequest)
	})
}
