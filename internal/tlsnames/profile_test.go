package tlsnames

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestConfig(t *testing.T) {
	c := Config(tls.VersionTLS13, nil)
	if c.MinVersion != tls.VersionTLS13 || !slices.Equal(c.CipherSuites, Intermediate()) {
		t.Errorf("no names: %+v", c)
	}
	c = Config(tls.VersionTLS12, []string{"ECDHE-RSA-AES128-GCM-SHA256"})
	if !slices.Equal(c.CipherSuites, []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}) {
		t.Errorf("one name: %v", c.CipherSuites)
	}
}

func TestAPIServerProfile(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		found      bool
		min        uint16
		names      []string
		err        string
	}{
		{name: "no file"},
		{name: "no profile", yaml: "kind: APIServer\nspec: {}\n", found: true, min: tls.VersionTLS12},
		{name: "modern", yaml: "spec:\n  tlsSecurityProfile:\n    type: Modern\n", found: true, min: tls.VersionTLS13},
		{name: "custom", yaml: "spec:\n  tlsSecurityProfile:\n    type: Custom\n    custom:\n      minTLSVersion: VersionTLS11\n      ciphers: [ECDHE-RSA-AES128-GCM-SHA256, DHE-RSA-AES128-GCM-SHA256]\n", found: true, min: tls.VersionTLS11, names: []string{"ECDHE-RSA-AES128-GCM-SHA256"}},
		{name: "bad version", yaml: "spec:\n  tlsSecurityProfile:\n    type: Custom\n    custom:\n      minTLSVersion: TLS9\n", err: "$.spec.tlsSecurityProfile"},
		{name: "not yaml", yaml: "spec: [", err: "api-server.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "api-server.yaml")
			if tc.yaml != "" {
				if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			min, names, found, err := APIServerProfile(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || found != tc.found || min != tc.min {
				t.Fatalf("got %v %v %v, want %v %v", min, found, err, tc.min, tc.found)
			}
			if tc.names != nil && !slices.Equal(names, tc.names) {
				t.Errorf("names %v, want %v", names, tc.names)
			}
			if tc.found && tc.names == nil && len(names) == 0 && tc.min == tls.VersionTLS12 {
				t.Error("the Intermediate profile has no suites")
			}
		})
	}
}
