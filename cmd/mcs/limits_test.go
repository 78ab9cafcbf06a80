package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// A request with a body (a smuggling attempt's Content-Length with
// Transfer-Encoding among them) is answered 400 and its connection closed.
func TestRefuseBodies(t *testing.T) {
	h := refuseBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	for name, req := range map[string]*http.Request{
		"chunked": {Method: "GET", URL: mustURL("/config/worker"), TransferEncoding: []string{"chunked"}, Header: http.Header{}},
		"length":  httptest.NewRequest("GET", "/config/worker", strings.NewReader("x")),
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
}

// The default TLS 1.2 suites are OpenShift's Intermediate profile's that Go
// has: AEAD and forward secret only, no CBC, no SHA-1.
func TestIntermediateSuites(t *testing.T) {
	var tls12 []uint16
	for _, s := range tls.CipherSuites() {
		if slices.Contains(intermediateSuites(), s.ID) && slices.Contains(s.SupportedVersions, tls.VersionTLS12) {
			tls12 = append(tls12, s.ID)
		}
	}
	if len(tls12) != 6 {
		t.Errorf("%d TLS 1.2 suites, want the profile's 6 ECDHE AEAD suites", len(tls12))
	}
	for _, id := range intermediateSuites() {
		name := tls.CipherSuiteName(id)
		if strings.HasPrefix(name, "TLS_AES_") || strings.HasPrefix(name, "TLS_CHACHA20_") {
			continue // TLS 1.3's, not configurable: Go ignores them here
		}
		if strings.Contains(name, "CBC") || strings.HasSuffix(name, "_SHA") || !strings.HasPrefix(name, "TLS_ECDHE_") {
			t.Errorf("default suite %s", name)
		}
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
