package pki

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/ignclient"
)

// serveChain serves d's certificate and chain with a config writing
// /etc/hello, at spec 2.2 to a spec-2 client, until the test ends.
func serveChain(t *testing.T, d desired) string {
	t.Helper()
	key, _ := encodeKey(d.serving.key)
	pair, err := tls.X509KeyPair(encodeCerts(append([]*x509.Certificate{d.serving.cert}, d.chain...)...), key)
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
	t.Cleanup(srv.Close)
	return srv.URL + "/config/worker"
}

// bootsWith runs client c against url trusting the PEM bundle ca.
func bootsWith(t *testing.T, ctx context.Context, c ignclient.Client, url string, ca []byte) {
	t.Helper()
	res := ignclient.Boot(ctx, t, c, url, ignclient.Options{CA: ca, HTTPTotal: 20 * time.Second})
	if b, err := res.ReadFile("/etc/hello"); err != nil || string(b) != "crossed" {
		t.Errorf("/etc/hello: %q %v", b, err)
	}
}

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
	url := serveChain(t, d1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for name, ca := range map[string][]byte{"old CA only": encodeCerts(d0.signer.cert), "bundle": encodeCerts(d1.bundle...)} {
		for _, c := range clients {
			t.Run(name+"/"+c.Version, func(t *testing.T) { bootsWith(t, ctx, c, url, ca) })
		}
	}
}

// The bundle of a CA replaced in its first second (so both have one
// NotBefore) still boots, once the old CA has expired, a client that
// reads only its first certificate (v0.35.0, a spec-2.2 boot image) as
// well as one that reads them all.
func TestBundleAfterOldCAExpiredRealClients(t *testing.T) {
	clients := []ignclient.Client{ignclient.Get(t, "v0.35.0"), ignclient.Get(t, "v2.27.0")}
	// The clients are other processes checking expiry on the machine's
	// clock, which no fake clock reaches: the two plans are made on a
	// clock an hour back, so that the old CA's two seconds are over now
	// and the new one's three hours are not.
	then := time.Now().Add(-time.Hour)
	hosts := []string{"localhost", "127.0.0.1"}
	d0, err := plan(then, current{}, hosts, Lifetimes{CAValidity: 2 * time.Second, CARefresh: time.Second, CertValidity: time.Hour, CertRefresh: time.Hour / 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	lt := Lifetimes{CAValidity: 3 * time.Hour, CARefresh: 150 * time.Minute, CertValidity: 3 * time.Hour, CertRefresh: 150 * time.Minute}
	d1, err := plan(then, applied(d0), hosts, lt, true)
	if err != nil {
		t.Fatal(err)
	}
	if old := d0.signer.cert.NotAfter; !time.Now().After(old) || !slices.ContainsFunc(d1.bundle, func(c *x509.Certificate) bool { return c.Equal(d0.signer.cert) }) {
		t.Fatalf("the bundle does not hold the old CA, expired (until %s)", old)
	}
	url := serveChain(t, d1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range clients {
		t.Run(c.Version, func(t *testing.T) { bootsWith(t, ctx, c, url, encodeCerts(d1.bundle...)) })
	}
}
