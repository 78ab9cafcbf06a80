package codecheck

import (
	"fmt"
	"go/token"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestMethodsPerType(t *testing.T) {
	st, err := Measure("../..")
	if err != nil {
		t.Fatal(err)
	}
	counts := st.Methods
	if len(counts) < 50 {
		t.Fatalf("only %d types with methods found", len(counts))
	}
	for _, typ := range slices.Sorted(maps.Keys(counts)) {
		if n := counts[typ]; n > maxMethods {
			t.Errorf("%s has %d methods, more than %d: split it by job", typ, n, maxMethods)
		}
	}
}

// A type one method over the limit is found, one at it is not; functions
// taking the type first count as its methods, those taking another
// package's type or a type the package does not declare do not.
func TestMethodsPerTypeFinds(t *testing.T) {
	methods := func(typ string, n, free int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "type %s struct{}\n", typ)
		for i := range n - free {
			fmt.Fprintf(&b, "func (*%s) m%d() {}\n", typ, i)
		}
		for i := range free {
			fmt.Fprintf(&b, "func %sF%d(x *%s, y int) {}\n", typ, i, typ)
		}
		return b.String()
	}
	src := "package p\n\n" + methods("atLimit", maxMethods, 0) + methods("over", maxMethods+1, 0) + methods("freeOver", maxMethods+1, 3) +
		"func g(ctx context.Context) {}\nfunc h(s string, l *Loader) {}\nfunc k(e elsewhere) {}\n"
	st := newStats()
	if err := st.add(token.NewFileSet(), "p/p.go", "p", src); err != nil {
		t.Fatal(err)
	}
	st.settle()
	want := map[string]int{"p.atLimit": maxMethods, "p.over": maxMethods + 1, "p.freeOver": maxMethods + 1}
	if !maps.Equal(st.Methods, want) {
		t.Errorf("counts %v, want %v", st.Methods, want)
	}
}
