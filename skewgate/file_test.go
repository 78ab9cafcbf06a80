package skewgate

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reload takes a new policy and keeps the one in force when the file
// stops parsing.
func TestFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := FromFile(path, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("no file: no error")
	}
	write("mode: None")
	var logged bytes.Buffer
	g, reload, err := FromFile(path, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if m := g.Policy().Mode; m != "None" {
		t.Fatalf("mode %q", m)
	}
	write("mode: Sometimes")
	reload()
	if m := g.Policy().Mode; m != "None" || !strings.Contains(logged.String(), "skew policy not reloaded") {
		t.Errorf("a bad file: mode %q, logged %q", m, logged.String())
	}
	write("mode: Automatic")
	reload()
	if m := g.Policy().Mode; m != "Automatic" {
		t.Errorf("a new policy: mode %q", m)
	}
}
