// Package pki keeps the machine-config-server's CA, bundle, serving certificate, pointer configs and pool tokens rotating without stranding a node.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" //nolint:gosec // the subject key id is RFC 5280's method 1, not a security hash
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sort"
	"strings"
	"time"
)

// keyBits is the RSA size of the CA's key, as library-go makes them: the
// oldest boot images' Go TLS stacks read it.
const keyBits = 2048

// KeyType is a serving certificate's key: ECDSA P-256 by default (what
// OpenShift's configurable PKI allows; a full handshake signs about four
// times faster than with RSA-2048, docs/reliability.md), RSA-2048 where a
// profile asks. Every Ignition's Go TLS stack verifies both.
type KeyType string

// The serving key types.
const (
	ECDSAP256 KeyType = "ecdsa-p256"
	RSA2048   KeyType = "rsa-2048"
)

// keyTypes are the serving key types, the default first.
var keyTypes = []KeyType{ECDSAP256, RSA2048}

func (k KeyType) orDefault() KeyType {
	if k == "" {
		return ECDSAP256
	}
	return k
}

// generate makes a key of type k.
func (k KeyType) generate() (crypto.Signer, error) {
	switch k.orDefault() {
	case ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, keyBits)
	}
	return nil, fmt.Errorf("unknown key type %q: want one of %v", k, keyTypes)
}

// keyTypeOf is c's key type, or its algorithm's name when mcs makes none
// of that kind.
func keyTypeOf(c *x509.Certificate) KeyType {
	switch k := c.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return ECDSAP256
		}
	case *rsa.PublicKey:
		if k.N.BitLen() == keyBits {
			return RSA2048
		}
	}
	return KeyType(strings.ToLower(c.PublicKeyAlgorithm.String()))
}

// pair is a certificate and its private key.
type pair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// newSigner makes a self-signed CA named as library-go names its signers
// (namespace_name@unix), valid from now for validity, never with the name
// of one of others (a CA replaced within the same second gets the next
// second's name): two CAs of one subject
// make clients try the wrong one's key ("crypto/rsa: verification error").
func newSigner(now time.Time, validity time.Duration, others ...*x509.Certificate) (*pair, error) {
	key, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return nil, fmt.Errorf("generating a CA key: %w", err)
	}
	stamp := now.Unix()
	taken := map[string]bool{}
	for _, c := range others {
		taken[c.Subject.CommonName] = true
	}
	for taken[fmt.Sprintf("%s_%s@%d", mcoNamespace, signerName, stamp)] {
		stamp++
	}
	tmpl := caTemplate(fmt.Sprintf("%s_%s@%d", mcoNamespace, signerName, stamp), key.Public(), now, now.Add(validity))
	return issue("signing the CA", tmpl, key, &pair{cert: tmpl, key: key})
}

// issue signs tmpl, a certificate for key, with by's key (what says what
// for an error), and returns it with key.
func issue(what string, tmpl *x509.Certificate, key crypto.Signer, by *pair) (*pair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, by.cert, key.Public(), by.key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &pair{cert: cert, key: key}, nil
}

func caTemplate(cn string, pub crypto.PublicKey, notBefore, notAfter time.Time) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		// A minute back: a node whose clock lags the controller's a little
		// must not see the certificate as not yet valid.
		NotBefore:             notBefore.Add(-time.Minute),
		NotAfter:              notAfter,
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		SubjectKeyId:          keyID(pub),
	}
}

// crossSign issues signer's subject and key again, signed by old: a node
// trusting only old then verifies a chain through it to a serving
// certificate signed by signer. It is valid as long as both are.
func crossSign(signer, old *pair) (*x509.Certificate, error) {
	notAfter := signer.cert.NotAfter
	if old.cert.NotAfter.Before(notAfter) {
		notAfter = old.cert.NotAfter
	}
	tmpl := caTemplate(signer.cert.Subject.CommonName, signer.key.Public(), signer.cert.NotBefore.Add(time.Minute), notAfter)
	tmpl.Subject = signer.cert.Subject
	p, err := issue("cross-signing the new CA with the old one", tmpl, signer.key, old)
	if err != nil {
		return nil, err
	}
	return p.cert, nil
}

// newServing issues the serving certificate for hosts (names and IPs),
// valid for validity but never past the signer.
func newServing(signer *pair, hosts []string, now time.Time, validity time.Duration, kt KeyType) (*pair, error) {
	if len(hosts) == 0 {
		return nil, errors.New("no host names for the serving certificate")
	}
	key, err := kt.generate()
	if err != nil {
		return nil, fmt.Errorf("generating the serving key: %w", err)
	}
	notAfter := now.Add(validity)
	if signer.cert.NotAfter.Before(notAfter) {
		notAfter = signer.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if _, ok := key.(*rsa.PrivateKey); ok {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return issue("signing the serving certificate", tmpl, key, signer)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n.Add(n, big.NewInt(1))
}

// keyID is RFC 5280's method 1; the cross-signed and self-signed copies of
// a CA must carry the same one, which Go only guarantees when it is set.
func keyID(pub crypto.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	sum := sha1.Sum(der) //nolint:gosec
	return sum[:]
}

// encodeCerts is the PEM of certs, in order.
func encodeCerts(certs ...*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// parseCerts reads every CERTIFICATE block of data, refusing anything that
// does not parse; other block types are skipped.
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func encodeKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parseKey reads a PKCS#1, PKCS#8 or SEC 1 key: an adopted CA's key may be
// any of them (the installer writes PKCS#1).
func parseKey(data []byte) (crypto.Signer, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s is not a PKCS#1, PKCS#8 or EC private key", b.Type)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T cannot sign", k)
	}
	return s, nil
}

// parsePair reads a certificate (the first of certPEM) and its key, and
// checks that they belong together.
func parsePair(certPEM, keyPEM []byte) (*pair, []*x509.Certificate, error) {
	certs, err := parseCerts(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("tls.crt: %w", err)
	}
	if len(certs) == 0 {
		return nil, nil, errors.New("tls.crt: no certificate")
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("tls.key: %w", err)
	}
	if !samePublicKey(certs[0].PublicKey, key.Public()) {
		return nil, nil, errors.New("tls.key is not the key of tls.crt")
	}
	return &pair{cert: certs[0], key: key}, certs[1:], nil
}

func samePublicKey(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}

// mergeCAs is cas without duplicates or certificates expired at now,
// newest first, then the longest-lived (ties by bytes, so the same set
// always encodes the same).
func mergeCAs(now time.Time, cas ...*x509.Certificate) []*x509.Certificate {
	seen := map[string]bool{}
	var out []*x509.Certificate
	for _, c := range cas {
		if c == nil || !now.Before(c.NotAfter) || seen[string(c.Raw)] {
			continue
		}
		seen[string(c.Raw)] = true
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].NotBefore.Equal(out[j].NotBefore) {
			return out[i].NotBefore.After(out[j].NotBefore)
		}
		if !out[i].NotAfter.Equal(out[j].NotAfter) {
			return out[i].NotAfter.After(out[j].NotAfter)
		}
		return bytes.Compare(out[i].Raw, out[j].Raw) < 0
	})
	return out
}

// describe names a certificate for people: its common name and expiry.
func describe(c *x509.Certificate) string {
	cn := c.Subject.CommonName
	if cn == "" {
		cn = strings.TrimSpace(c.Subject.String())
	}
	return fmt.Sprintf("%q (expires %s)", cn, c.NotAfter.UTC().Format(time.RFC3339))
}
