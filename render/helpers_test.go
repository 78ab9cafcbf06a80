package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

// doc is a MachineConfig document with an optional Ignition config (JSON)
// and extra spec lines (YAML, indented two spaces under spec).
func doc(name, role, ign string, spec ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: %s\n", name)
	if role != "" {
		fmt.Fprintf(&b, "  labels:\n    machineconfiguration.openshift.io/role: %s\n", role)
	}
	b.WriteString("spec:\n")
	if ign != "" {
		fmt.Fprintf(&b, "  config: %s\n", ign)
	}
	for _, s := range spec {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	return b.String()
}

// file is a spec-3.2 config holding one file.
func file(path, source string, extra ...string) string {
	f := fmt.Sprintf(`{"path":%q,"contents":{"source":%q}`, path, source)
	for _, e := range extra {
		f += "," + e
	}
	return `{"ignition":{"version":"3.2.0"},"storage":{"files":[` + f + `}]}}`
}

// setOf loads documents as if each were a file of its own.
func setOf(t testing.TB, docs ...string) *Set {
	t.Helper()
	var l Loader
	for i, d := range docs {
		l.Data(fmt.Sprintf("in/%02d.yaml", i), []byte(d))
	}
	s, err := l.Set()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustRender(t testing.TB, s *Set, pool string, opts Options) *Result {
	t.Helper()
	r, err := s.RenderPool(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// renderErrs renders a pool that must fail and returns its problems.
func renderErrs(t testing.TB, s *Set, pool string, opts Options) []*Error {
	t.Helper()
	_, err := s.RenderPool(pool, opts)
	if err == nil {
		t.Fatalf("pool %s rendered; want an error", pool)
	}
	var es *Errors
	if !errors.As(err, &es) {
		t.Fatalf("error %T is not *Errors: %v", err, err)
	}
	return es.List
}

func fileByPath(cfg *convert.Config, path string) int {
	for i, f := range cfg.Storage.Files {
		if f.Path == path {
			return i
		}
	}
	return -1
}

func source(t testing.TB, cfg *convert.Config, path string) string {
	t.Helper()
	i := fileByPath(cfg, path)
	if i < 0 {
		t.Fatalf("no file %s in the merged config", path)
	}
	if s := cfg.Storage.Files[i].Contents.Source; s != nil {
		return *s
	}
	return ""
}

func jsonValid(b []byte) bool { return json.Valid(b) }
