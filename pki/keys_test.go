package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"
)

// The serving certificate's key is ECDSA P-256 unless RSA-2048 is asked
// for; asking for the other kind replaces it at the next pass, the CA
// kept.
func TestServingKeyType(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	hosts := []string{"localhost", "127.0.0.1"}
	lt := Lifetimes{CAValidity: time.Hour, CARefresh: 50 * time.Minute, CertValidity: time.Hour, CertRefresh: 50 * time.Minute}
	d0, err := plan(now, current{}, hosts, lt, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := keyTypeOf(d0.serving.cert); got != ECDSAP256 {
		t.Fatalf("default serving key %s, want %s", got, ECDSAP256)
	}
	if d0.serving.cert.KeyUsage&x509.KeyUsageKeyEncipherment != 0 {
		t.Error("an ECDSA certificate with keyEncipherment")
	}
	lt.ServingKey = RSA2048
	d1, err := plan(now.Add(time.Minute), applied(d0), hosts, lt, false)
	if err != nil {
		t.Fatal(err)
	}
	if !d1.servingChanged || d1.signerChanged || keyTypeOf(d1.serving.cert) != RSA2048 {
		t.Fatalf("asking for RSA: serving changed %v (%s), CA changed %v; reasons %v", d1.servingChanged, keyTypeOf(d1.serving.cert), d1.signerChanged, d1.reasons)
	}
	d2, err := plan(now.Add(2*time.Minute), applied(d1), hosts, lt, false)
	if err != nil || d2.servingChanged {
		t.Errorf("an RSA certificate replaced while RSA is asked for: %v %v", err, d2.reasons)
	}
	if err := (Lifetimes{CAValidity: time.Hour, CARefresh: time.Minute, CertValidity: time.Hour, CertRefresh: time.Minute, ServingKey: "dsa"}).validate(); err == nil {
		t.Error("an unknown key type accepted")
	}
}

// What a full TLS handshake costs with each serving key: the server's
// signature alone (its CPU a connection, what one address forcing
// handshakes makes the server spend), and a whole handshake, both sides,
// over an in-memory pipe. docs/reliability.md quotes them.
func BenchmarkHandshake(b *testing.B) {
	now := time.Now()
	ca, err := newSigner(now, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, kt := range keyTypes {
		s, err := newServing(ca, []string{"localhost"}, now, time.Hour, kt)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(kt)+"/sign", func(b *testing.B) {
			d := sha256.Sum256([]byte("handshake transcript"))
			for b.Loop() {
				if _, err := s.key.Sign(rand.Reader, d[:], crypto.SHA256); err != nil {
					b.Fatal(err)
				}
			}
		})
		roots := x509.NewCertPool()
		roots.AddCert(ca.cert)
		srv := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{s.cert.Raw}, PrivateKey: s.key}}}
		cli := &tls.Config{RootCAs: roots, ServerName: "localhost", ClientSessionCache: nil}
		b.Run(string(kt)+"/handshake", func(b *testing.B) {
			for b.Loop() {
				c, sc := net.Pipe()
				errc := make(chan error, 1)
				go func() { errc <- tls.Server(sc, srv).Handshake(); sc.Close() }()
				if err := tls.Client(c, cli).Handshake(); err != nil {
					b.Fatal(err)
				}
				c.Close()
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
