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

// A type one method over the limit is found, one at it is not.
func TestMethodsPerTypeFinds(t *testing.T) {
	methods := func(typ string, n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "type %s struct{}\n", typ)
		for i := range n {
			fmt.Fprintf(&b, "func (*%s) m%d() {}\n", typ, i)
		}
		return b.String()
	}
	src := "package p\n\n" + methods("atLimit", maxMethods) + methods("over", maxMethods+1)
	st := &Stats{PerPackage: map[string]int{}, Methods: map[string]int{}}
	if err := st.add(token.NewFileSet(), "p/p.go", "p", src); err != nil {
		t.Fatal(err)
	}
	counts := st.Methods
	if counts["p.atLimit"] != maxMethods || counts["p.over"] != maxMethods+1 {
		t.Errorf("counts %v", counts)
	}
}
