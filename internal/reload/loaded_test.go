package reload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/testpki"
)

// LoadedPair says which files failed until a pair loads, then serves it.
func TestLoadedPair(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	get := LoadedPair(cert, key)
	if _, err := get(); err == nil || !strings.Contains(err.Error(), "TLS certificate "+cert+" and key "+key) {
		t.Fatalf("no files: %v", err)
	}
	pair := testpki.NewCA(t).Serving(t)
	if err := os.WriteFile(key, pair.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cert, pair.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := get()
	if err != nil || c == nil || len(c.Certificate) != 1 {
		t.Fatalf("a pair: %v, %v", c, err)
	}
}
