package main

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// suitesNamed reads cipher suite names, IANA's (Go's) or OpenSSL's (the
// one table, cipherSuites), into Go's IDs; an unknown name is an error
// naming it. The TLS 1.3 suites are accepted and have no effect (Go always
// offers its own for TLS 1.3).
func suitesNamed(names []string) ([]uint16, error) {
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

// tlsVersion reads a TLS version as OpenShift and Kubernetes name it
// (VersionTLS12), as OpenSSL does (TLSv1.2) or as a number (1.2).
func tlsVersion(s string) (uint16, error) {
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

// tlsOptions are --tls-min-version and --tls-cipher-suites.
type tlsOptions struct {
	minVersion uint16
	names      []string // as given, comma lists split
}

func (t *tlsOptions) define(defineFunc func(name, usage string, fn func(string) error)) {
	t.minVersion = tls.VersionTLS12
	defineFunc("tls-min-version", "lowest TLS version served: VersionTLS10 … VersionTLS13 (OpenShift's names; TLSv1.2 or 1.2 also read) (default VersionTLS12)", func(s string) error {
		v, err := tlsVersion(s)
		t.minVersion = v
		return err
	})
	defineFunc("tls-cipher-suites", "comma-separated TLS 1.2 cipher suites, IANA's or OpenSSL's names; may repeat (default: OpenShift's Intermediate profile)", func(s string) error {
		names := strings.Split(s, ",")
		if _, err := suitesNamed(names); err != nil {
			return err
		}
		t.names = append(t.names, names...)
		return nil
	})
}

// config is the TLS configuration the options ask for.
func (t *tlsOptions) config() *tls.Config {
	ids, _ := suitesNamed(t.names) // checked as parsed
	if len(ids) == 0 {
		ids = intermediateSuites()
	}
	return &tls.Config{MinVersion: t.minVersion, CipherSuites: ids}
}
