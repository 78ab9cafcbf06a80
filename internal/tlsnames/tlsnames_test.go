package tlsnames

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"
)

// Suites are read by OpenSSL's names as by IANA's, and TLS versions by
// OpenShift's, OpenSSL's and plain names.
func TestCipherNames(t *testing.T) {
	for ossl, iana := range map[string]string{"ECDHE-RSA-AES128-GCM-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "AES128-SHA": "TLS_RSA_WITH_AES_128_CBC_SHA"} {
		a, err1 := Suites([]string{ossl})
		b, err2 := Suites([]string{iana})
		if err1 != nil || err2 != nil || len(a) != 1 || !slices.Equal(a, b) {
			t.Errorf("%s / %s: %v %v %v %v", ossl, iana, a, b, err1, err2)
		}
	}
	if _, err := Suites([]string{"DHE-RSA-AES128-GCM-SHA256"}); err == nil {
		t.Error("a suite Go does not have: no error")
	}
	for in, want := range map[string]uint16{"VersionTLS12": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13, "1.1": tls.VersionTLS11, "VersionTLS10": tls.VersionTLS10} {
		if got, err := Version(in); err != nil || got != want {
			t.Errorf("%s: %x %v", in, got, err)
		}
	}
}

// The default TLS 1.2 suites are OpenShift's Intermediate profile's that Go
// has: AEAD and forward secret only, no CBC, no SHA-1.
func TestIntermediateSuites(t *testing.T) {
	var tls12 []uint16
	for _, s := range tls.CipherSuites() {
		if slices.Contains(Intermediate(), s.ID) && slices.Contains(s.SupportedVersions, tls.VersionTLS12) {
			tls12 = append(tls12, s.ID)
		}
	}
	if len(tls12) != 6 {
		t.Errorf("%d TLS 1.2 suites, want the profile's 6 ECDHE AEAD suites", len(tls12))
	}
	for _, id := range Intermediate() {
		name := tls.CipherSuiteName(id)
		if strings.HasPrefix(name, "TLS_AES_") || strings.HasPrefix(name, "TLS_CHACHA20_") {
			continue // TLS 1.3's, not configurable: Go ignores them here
		}
		if strings.Contains(name, "CBC") || strings.HasSuffix(name, "_SHA") || !strings.HasPrefix(name, "TLS_ECDHE_") {
			t.Errorf("default suite %s", name)
		}
	}
}
