package codecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// maxLines is the longest a function may be, counted from its func line to
// its closing brace: past it, a function does more than one thing.
const maxLines = 80

func TestFunctionLength(t *testing.T) {
	long, err := longFunctions("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range long {
		t.Errorf("%s: split it", f)
	}
}

// A function one line over the limit is found, one at the limit is not.
func TestFunctionLengthFinds(t *testing.T) {
	body := func(name string, lines int) string {
		return "func " + name + "() {\n" + strings.Repeat("\tprintln()\n", lines-2) + "}\n"
	}
	src := "package p\n\n" + body("atLimit", maxLines) + body("over", maxLines+1)
	got, err := longIn(token.NewFileSet(), "p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("p.go:%d: over is %d lines", maxLines+3, maxLines+1); len(got) != 1 || got[0] != want {
		t.Errorf("longIn = %q, want [%q]", got, want)
	}
}

// longFunctions lists "file:line: name is N lines" for every function
// declared in a Go file under root longer than maxLines.
func longFunctions(root string) ([]string, error) {
	fset := token.NewFileSet()
	var out []string
	err := goFiles(root, true, func(p string) error {
		long, err := longIn(fset, p, nil)
		out = append(out, long...)
		return err
	})
	return out, err
}

func longIn(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := end.Line - start.Line + 1; n > maxLines {
				out = append(out, fmt.Sprintf("%s:%d: %s is %d lines", name, start.Line, fd.Name.Name, n))
			}
		}
	}
	return out, nil
}
