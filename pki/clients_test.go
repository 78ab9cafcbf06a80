package pki

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/ignclient"
)

// Real clients of three eras (spec 3.6, 3.2 and 2.2 readers, each built
// with its own release's Go TLS stack) verify a serving certificate of the
// new CA through the cross-signature when their pointer config trusts only
// the old CA, and directly with the bundle.
func TestCrossSignedChainRealClients(t *testing.T) {
	clients := []ignclient.Client{ignclient.Get(t, "v2.27.0"), ignclient.Get(t, "v2.9.0"), ignclient.Get(t, "v0.35.0")}
	now := time.Now()
	lt := Lifetimes{CAValidity: time.Hour, CARefresh: 50 * time.Minute, CertValidity: time.Hour, CertRefresh: 50 * time.Minute}
	d0, err := plan(now, current{}, []string{"localhost", "127.0.0.1"}, lt, false)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := plan(now, applied(d0), []string{"localhost", "127.0.0.1"}, lt, true)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := encodeKey(d1.serving.key)
	pair, err := tls.X509KeyPair(encodeCerts(append([]*x509.Certificate{d1.serving.cert}, d1.chain...)...), key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := "3.0.0"
		if strings.Contains(r.Header.Get("Accept"), "version=2.2.0") && !strings.Contains(r.Header.Get("Accept"), "version=3") {
			v = "2.2.0"
		}
		w.Write([]byte(`{"ignition":{"version":"` + v + `"},"storage":{"files":[{"path":"/etc/hello","contents":{"source":"data:,crossed"},"mode":420` + map[bool]string{true: `,"filesystem":"root"`}[v == "2.2.0"] + `}]}}`))
	}))
	srv.Listener, _ = net.Listen("tcp", "127.0.0.1:0")
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for name, ca := range map[string][]byte{"old CA only": encodeCerts(d0.signer.cert), "bundle": encodeCerts(d1.bundle...)} {
		for _, c := range clients {
			t.Run(name+"/"+c.Version, func(t *testing.T) {
				res, err := ignclient.Run(ctx, c, srv.URL+"/config/worker", ignclient.Options{CA: ca, HTTPTotal: 20 * time.Second})
				if res != nil {
					defer os.RemoveAll(res.Dir)
				}
				if err != nil {
					t.Fatalf("%v\n%s", err, res.Log)
				}
				if b, err := res.ReadFile("/etc/hello"); err != nil || string(b) != "crossed" {
					t.Errorf("/etc/hello: %q %v", b, err)
				}
			})
		}
	}
}
