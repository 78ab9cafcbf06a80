package main

import (
	"crypto/tls"
	"strings"

	"github.com/ignition-mcs/mcs/internal/tlsnames"
)

// tlsOptions are --tls-min-version and --tls-cipher-suites.
type tlsOptions struct {
	minVersion uint16
	names      []string // as given, comma lists split
}

func (t *tlsOptions) define(defineFunc func(name, usage string, fn func(string) error)) {
	t.minVersion = tls.VersionTLS12
	defineFunc("tls-min-version", "lowest TLS version served: VersionTLS10 … VersionTLS13 (OpenShift's names; TLSv1.2 or 1.2 also read) (default VersionTLS12)", func(s string) error {
		v, err := tlsnames.Version(s)
		t.minVersion = v
		return err
	})
	defineFunc("tls-cipher-suites", "comma-separated TLS 1.2 cipher suites, IANA's or OpenSSL's names; may repeat (default: OpenShift's Intermediate profile)", func(s string) error {
		names := strings.Split(s, ",")
		if _, err := tlsnames.Suites(names); err != nil {
			return err
		}
		t.names = append(t.names, names...)
		return nil
	})
}

// config is the TLS configuration the options ask for.
func (t *tlsOptions) config() *tls.Config { return tlsnames.Config(t.minVersion, t.names) }
