// Package tlsnames reads TLS cipher suites and versions by the names OpenShift, OpenSSL and IANA give them, and OpenShift's profiles.
package tlsnames

import (
	"crypto/tls"
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
)

// cipherSuites maps the names OpenShift's TLS security profiles use
// (OpenSSL's, as in the APIServer's tlsSecurityProfile) and the IANA names
// to Go's suites: the one table of TLS 1.2 suites mcs knows by name.
// TLS 1.3's suites are not configurable in Go, and Go has no DHE suites:
// those names map to nothing and are skipped.
var cipherSuites = map[string]uint16{
	"ECDHE-ECDSA-AES128-GCM-SHA256": tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-RSA-AES128-GCM-SHA256":   tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-ECDSA-AES256-GCM-SHA384": tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-RSA-AES256-GCM-SHA384":   tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-ECDSA-CHACHA20-POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-RSA-CHACHA20-POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-ECDSA-AES128-SHA256":     tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-RSA-AES128-SHA256":       tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-ECDSA-AES128-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"ECDHE-RSA-AES128-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"ECDHE-ECDSA-AES256-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-AES256-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	"AES128-GCM-SHA256":             tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	"AES256-GCM-SHA384":             tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	"AES128-SHA256":                 tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
	"AES128-SHA":                    tls.TLS_RSA_WITH_AES_128_CBC_SHA,
	"AES256-SHA":                    tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	"DES-CBC3-SHA":                  tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
}

func init() {
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		cipherSuites[s.Name] = s.ID // TLS 1.3's too: named in profiles, ignored by Go's TLS 1.2
	}
}

// profileSuites is the TLS 1.2 suites of an OpenShift TLS profile.
func profileSuites(p configv1.TLSProfileType) []uint16 {
	var out []uint16
	for _, name := range configv1.TLSProfiles[p].Ciphers {
		if id, ok := cipherSuites[name]; ok {
			out = append(out, id)
		}
	}
	return out
}

// Intermediate is the default TLS 1.2 suites: those of OpenShift's
// Intermediate profile, the APIServer's default (no CBC, no SHA-1, forward
// secret only), where Go's default also accepts ECDHE with AES-CBC-SHA1.
func Intermediate() []uint16 { return profileSuites(configv1.TLSProfileIntermediateType) }

// Suites reads cipher suite names, IANA's (Go's) or OpenSSL's (the
// one table, cipherSuites), into Go's IDs; an unknown name is an error
// naming it. The TLS 1.3 suites are accepted and have no effect (Go always
// offers its own for TLS 1.3).
func Suites(names []string) ([]uint16, error) {
	var out []uint16
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		id, ok := cipherSuites[n]
		if !ok {
			return nil, fmt.Errorf("unknown TLS cipher suite %q: want IANA names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) or OpenSSL's (ECDHE-RSA-AES128-GCM-SHA256)", n)
		}
		out = append(out, id)
	}
	return out, nil
}

// Version reads a TLS version as OpenShift and Kubernetes name it
// (VersionTLS12), as OpenSSL does (TLSv1.2) or as a number (1.2).
func Version(s string) (uint16, error) {
	v := strings.TrimSpace(s)
	for _, p := range []string{"VersionTLS", "TLSv", "TLS"} {
		v = strings.TrimPrefix(v, p)
	}
	switch strings.TrimSpace(v) {
	case "10", "1.0":
		return tls.VersionTLS10, nil
	case "11", "1.1":
		return tls.VersionTLS11, nil
	case "12", "1.2":
		return tls.VersionTLS12, nil
	case "13", "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("unknown TLS version %q: want VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13", s)
}

// suite is the ID of a suite named as Suites reads names.
func suite(name string) (uint16, bool) {
	id, ok := cipherSuites[name]
	return id, ok
}
