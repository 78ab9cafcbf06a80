package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// era is what one Ignition release sends with its config fetch
// (reference/ignition.md, pinned by internal/ignclient's tests).
type era struct{ version, accept string }

func acceptV3(spec string) string {
	return "application/vnd.coreos.ignition+json;version=" + spec + ", */*;q=0.1"
}

// allEras are the boot images' clients, newest first: one per spec.
var allEras = []era{
	{"v2.27.0", acceptV3("3.6.0")},
	{"v2.24.0", acceptV3("3.5.0")},
	{"v2.19.0", acceptV3("3.4.0")},
	{"v2.14.0", acceptV3("3.3.0")},
	{"v2.9.0", acceptV3("3.2.0")},
	{"v2.2.0", acceptV3("3.0.0")},
	{"v0.35.0", "application/vnd.coreos.ignition+json; version=2.2.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1"},
}

func (e era) userAgent() string { return "Ignition/" + e.version }

// eraNames is the versions of eras, of every era when none are given.
func eraNames(eras ...era) []string {
	if len(eras) == 0 {
		eras = allEras
	}
	out := make([]string, len(eras))
	for i, e := range eras {
		out[i] = e.version
	}
	return out
}

func erasNamed(list string) ([]era, error) {
	var out []era
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		found := false
		for _, e := range allEras {
			if e.version == v {
				out, found = append(out, e), true
			}
		}
		if !found {
			return nil, fmt.Errorf("-eras: no client era %q (have %s)", v, strings.Join(eraNames(), ", "))
		}
	}
	return out, nil
}

// fixture is what every server of a run shares: one certificate (a new
// CA's, for 127.0.0.1; RSA 2048 by default, as OpenShift's installer makes
// the machine-config-server's and its root CA) and one pool token.
type fixture struct {
	dir               string
	caPEM             []byte
	certFile, keyFile string
	tokenFile, token  string
	caFile            string
}

func newFixture(dir string, o options) (*fixture, error) {
	f := &fixture{dir: dir, certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key"),
		tokenFile: filepath.Join(dir, "tokens"), caFile: filepath.Join(dir, "ca.crt")}
	caPEM, certPEM, keyPEM, err := newPKI(time.Now(), o.keyType)
	if err != nil {
		return nil, err
	}
	f.caPEM = caPEM
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	f.token = base64.RawURLEncoding.EncodeToString(tok)
	for name, b := range map[string][]byte{f.caFile: caPEM, f.certFile: certPEM, f.keyFile: keyPEM,
		f.tokenFile: []byte(f.token + " " + o.pool + "\n")} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// newPKI is a CA and a serving certificate for 127.0.0.1 it signed, both
// with keys of keyType: "rsa2048" (OpenShift's: its signature is each full
// handshake's largest cost) or "p256".
func newPKI(now time.Time, keyType string) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := newKey(keyType)
	if err != nil {
		return nil, nil, nil, err
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcs storm CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, caKey.Public(), caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := newKey(keyType)
	if err != nil {
		return nil, nil, nil, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, key.Public(), caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func newKey(keyType string) (crypto.Signer, error) {
	switch keyType {
	case "rsa2048", "":
		return rsa.GenerateKey(rand.Reader, 2048)
	case "p256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	return nil, fmt.Errorf("-key: %q is not rsa2048 or p256", keyType)
}
