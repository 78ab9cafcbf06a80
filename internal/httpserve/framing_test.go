package httpserve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A request with a body (a smuggling attempt's Content-Length with
// Transfer-Encoding among them) is answered 400 and its connection closed.
func TestRefuseBodies(t *testing.T) {
	h := refuseBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	for name, req := range map[string]*http.Request{
		"chunked":           {Method: "GET", URL: mustURL("/config/worker"), TransferEncoding: []string{"chunked"}, Header: http.Header{}},
		"length":            httptest.NewRequest("GET", "/config/worker", strings.NewReader("x")),
		"report chunked":    {Method: "POST", URL: mustURL("/v1/node-failure"), TransferEncoding: []string{"chunked"}, Header: http.Header{}},
		"report other path": httptest.NewRequest("POST", "/v1/node-failures", strings.NewReader("{}")),
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req.WithContext(context.Background()))
		if w.Code != 400 || w.Header().Get("Connection") != "close" {
			t.Errorf("%s: %d, Connection %q", name, w.Code, w.Header().Get("Connection"))
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/config/worker", nil))
	if w.Code != 200 {
		t.Errorf("a request without a body: %d", w.Code)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/node-failure", strings.NewReader("{}")))
	if w.Code != 200 {
		t.Errorf("a node's report with a Content-Length: %d", w.Code)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
