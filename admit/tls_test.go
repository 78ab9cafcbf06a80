package admit

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/ignition-mcs/mcs/internal/testpki"
)

// With a client CA, a review needs a client certificate the CA signed
// (403 otherwise, one of another CA fails the handshake); the probes need
// none.
func TestServeTLSClientCA(t *testing.T) {
	serving, clients, other := testpki.NewCA(t), testpki.NewCA(t), testpki.NewCA(t)
	dir := t.TempDir()
	cert, key := serving.Serving(t).Files(t, dir)
	caFile := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(caFile, clients.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	w := New(Config{})
	w.SetCeiling(Ceiling{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeTLS(ctx, ln, w, TLSConfig{CertFile: cert, KeyFile: key, ClientCAFile: caFile}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	client := func(p *testpki.Pair) *http.Client {
		tc := &tls.Config{RootCAs: serving.Pool()}
		if p != nil {
			tc.Certificates = []tls.Certificate{p.TLS(t)}
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	}
	apiServer, stranger := clients.Client(t, "kube-apiserver"), other.Client(t, "stranger")
	body := reviewBody(admissionv1.Create, "alice", mcObject("99-kargs", kargs35), nil)
	base := "https://" + ln.Addr().String()
	for _, c := range []struct {
		name   string
		client *http.Client
		path   string
		want   int // 0: the handshake fails
	}{
		{"the API server's review", client(&apiServer), MutatePath, 200},
		{"a review without a certificate", client(nil), MutatePath, 403},
		{"a review with another CA's", client(&stranger), MutatePath, 0},
		{"a probe without one", client(nil), "/healthz", 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			var res *http.Response
			var err error
			if c.path == MutatePath {
				res, err = c.client.Post(base+c.path, "application/json", bytes.NewReader(body))
			} else {
				res, err = c.client.Get(base + c.path)
			}
			if c.want == 0 {
				if err == nil {
					res.Body.Close()
					t.Fatalf("answered %d, want the handshake refused", res.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != c.want {
				t.Errorf("%d, want %d", res.StatusCode, c.want)
			}
		})
	}
}
