package codecheck

import (
	"os"
	"path/filepath"
	"testing"
)

// Measure counts non-test files, exported names outside package main,
// and methods on every named type, testdata and nested modules aside.
func TestMeasure(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", "package a\ntype T struct{}\ntype g[P any] struct{}\nfunc (T) One() {}\nfunc (*T) two() {}\nfunc (g[P]) three() {}\nvar X, y = 1, 2\nconst Z = 3\nfunc F() {}\n")
	write("a/a_test.go", "package a\nfunc (T) Test() {}\nfunc G() {}\n")
	write("cmd/c/main.go", "package main\nfunc Main() {}\ntype U int\nfunc (U) M() {}\n")
	write("a/testdata/x.go", "package x\nfunc H() {}\n")
	write("tool/go.mod", "module tool\n")
	write("tool/main.go", "package main\ntype V int\nfunc (V) M() {}\n")
	st, err := Measure(dir)
	if err != nil {
		t.Fatal(err)
	}
	// a: T, One, X, Z and F; main's names are no API.
	if len(st.PerPackage) != 2 || st.Files != 1 || st.Exported != 5 {
		t.Errorf("packages %d, files %d, exported %d; want 2, 1, 5", len(st.PerPackage), st.Files, st.Exported)
	}
	if st.Methods["a.T"] != 2 || st.Methods["a.g"] != 1 || st.Methods["cmd/c.U"] != 1 {
		t.Errorf("methods %v", st.Methods)
	}
	want := "packages 2, non-test files outside cmd/hack/e2e 1, exported identifiers 5, types with more than 15 methods 0\n" +
		"most files: a 1, cmd/c 1\nmost methods: a.T 2, a.g 1, cmd/c.U 1\n"
	if s := st.String(); s != want {
		t.Errorf("printed %q, want %q", s, want)
	}
}
