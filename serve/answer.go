package serve

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
)

// Answer is what GET /config/<pool> answers a request carrying header h:
// the status, the response headers and the body. The request goes through
// the server's own router (negotiation, skew gate, precomputed bytes), so
// `render --client` prints exactly what a node would receive; the metrics
// and the request log see it as a request from "render".
func (s *Server) Answer(ctx context.Context, pool string, h http.Header) (int, http.Header, []byte) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/config/"+url.PathEscape(pool), nil)
	if err != nil {
		// Cannot happen: the URL is a path with the pool escaped.
		return http.StatusBadRequest, http.Header{}, []byte(err.Error() + "\n")
	}
	r.Header = h.Clone()
	r.RemoteAddr = "render"
	w := &answerWriter{h: http.Header{}}
	s.ServeHTTP(w, r)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.code, w.h, w.body.Bytes()
}

// answerWriter keeps a response in memory.
type answerWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *answerWriter) Header() http.Header { return w.h }

func (w *answerWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *answerWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}
