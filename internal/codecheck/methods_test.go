package codecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxMethods is the most methods a type may have: past it, a type does
// more than one job (serve.Server had 36 before it was split in three).
const maxMethods = 15

func TestMethodsPerType(t *testing.T) {
	counts, err := methodCounts("../..")
	if err != nil {
		t.Fatal(err)
	}
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
	counts := map[string]int{}
	if err := countIn(token.NewFileSet(), "p/p.go", "p", src, counts); err != nil {
		t.Fatal(err)
	}
	if counts["p.atLimit"] != maxMethods || counts["p.over"] != maxMethods+1 {
		t.Errorf("counts %v", counts)
	}
}

// methodCounts counts the methods declared in non-test Go files under
// root (see goFiles) by "dir.Type", dir relative to root.
func methodCounts(root string) (map[string]int, error) {
	fset := token.NewFileSet()
	counts := map[string]int{}
	err := goFiles(root, func(p string) error {
		if strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		return countIn(fset, p, filepath.ToSlash(dir), nil, counts)
	})
	return counts, err
}

func countIn(fset *token.FileSet, name, dir string, src any, counts map[string]int) error {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
			continue
		}
		typ := fn.Recv.List[0].Type
		for {
			switch x := typ.(type) {
			case *ast.StarExpr:
				typ = x.X
				continue
			case *ast.IndexExpr:
				typ = x.X
				continue
			case *ast.IndexListExpr:
				typ = x.X
				continue
			}
			break
		}
		if id, ok := typ.(*ast.Ident); ok {
			counts[dir+"."+id.Name]++
		}
	}
	return nil
}
