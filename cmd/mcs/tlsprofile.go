package main

import (
	"crypto/tls"

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

// intermediateSuites are the default TLS 1.2 suites: those of OpenShift's
// Intermediate profile, the APIServer's default (no CBC, no SHA-1, forward
// secret only), where Go's default also accepts ECDHE with AES-CBC-SHA1.
func intermediateSuites() []uint16 { return profileSuites(configv1.TLSProfileIntermediateType) }
