package serve

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/source"
)

// A failed certificate reload is the CertificateReloadFailed condition
// until a pair loads again, and one notice per pool for each new failure,
// not for each handshake that sees it again.
func TestCertificateReload(t *testing.T) {
	var mu sync.Mutex
	var notices []source.Notice
	s := worker(t, Config{Notify: func(n source.Notice) { mu.Lock(); notices = append(notices, n); mu.Unlock() }})
	cond := func() *status.Condition {
		for _, c := range s.Status().Conditions {
			if c.Type == "CertificateReloadFailed" {
				return &c
			}
		}
		return nil
	}
	if c := cond(); c != nil {
		t.Fatalf("a condition without TLS: %+v", c)
	}
	s.CertificateReload(nil)
	if c := cond(); c == nil || c.Status != "False" {
		t.Fatalf("with TLS on and the pair loaded: %+v", c)
	}
	bad := errors.New("certificate /tls/tls.crt and key /tls/tls.key: tls: private key does not match public key")
	for range 3 {
		s.CertificateReload(bad)
	}
	if c := cond(); c == nil || c.Status != "True" || !strings.Contains(c.Message, "/tls/tls.key") {
		t.Fatalf("after a failed reload: %+v", c)
	}
	mu.Lock()
	if len(notices) != 1 || notices[0].Kind != source.NoticeCertificateReloadFailed || notices[0].Pool != "worker" || !strings.Contains(notices[0].Message, "does not match") {
		t.Errorf("notices %+v, want one CertificateReloadFailed on worker", notices)
	}
	mu.Unlock()
	s.CertificateReload(nil)
	if c := cond(); c == nil || c.Status != "False" {
		t.Fatalf("after a good reload: %+v", c)
	}
}

// ?pretty=1 is indented once per response and served from then on like any
// precomputed body, with its own ETag.
func TestPrettyCached(t *testing.T) {
	s := worker(t, Config{})
	a := get(t, s, "GET", "/config/worker?pretty=1", "Accept", hdr34)
	b := get(t, s, "GET", "/config/worker?pretty=1", "Accept", hdr34)
	plain := get(t, s, "GET", "/config/worker", "Accept", hdr34)
	if a.Code != 200 || a.Body.String() != b.Body.String() || !strings.Contains(a.Body.String(), "\n  \"ignition\"") {
		t.Fatalf("pretty bodies %d %q / %q", a.Code, a.Body, b.Body)
	}
	if a.Header().Get("Etag") == plain.Header().Get("Etag") || !strings.HasSuffix(a.Header().Get("Etag"), `-pretty"`) {
		t.Errorf("pretty ETag %s, plain %s", a.Header().Get("Etag"), plain.Header().Get("Etag"))
	}
	resp := s.Snapshot().Pool("worker").Response(convert.V3_4)
	if kept := resp.Pretty(); kept.ETag[0] != a.Header().Get("Etag") || resp.Pretty() != kept {
		t.Error("the indented body is not kept")
	}
}
