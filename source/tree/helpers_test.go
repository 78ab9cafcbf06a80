package tree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/render"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func loadErrs(t *testing.T, paths ...string) []*render.Error {
	t.Helper()
	_, err := Load(paths...)
	var es *render.Errors
	if !errors.As(err, &es) {
		t.Fatalf("Load error %v, want *render.Errors", err)
	}
	return es.List
}

// doc is a MachineConfig document with an optional Ignition config (JSON).
func doc(name, role, ign string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: %s\n", name)
	if role != "" {
		fmt.Fprintf(&b, "  labels:\n    machineconfiguration.openshift.io/role: %s\n", role)
	}
	b.WriteString("spec:\n")
	if ign != "" {
		fmt.Fprintf(&b, "  config: %s\n", ign)
	}
	return b.String()
}

// file is a spec-3.2 config holding one file.
func file(path, source string) string {
	return fmt.Sprintf(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":%q,"contents":{"source":%q}}]}}`, path, source)
}
