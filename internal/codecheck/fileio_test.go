package codecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// noFileIO are the packages that take bytes and never open, read, stat or
// walk files: sources read (source/tree), render renders, as Ignition's
// config/v3_* parse bytes and internal/resource fetches.
var noFileIO = []string{"render"}

// fileIOImports are the packages whose use is file I/O, or a way to it.
var fileIOImports = map[string]bool{"os": true, "io/ioutil": true, "syscall": true, "golang.org/x/sys/unix": true}

// fileIOCalls are the functions of other packages that read or walk files.
var fileIOCalls = map[string]bool{
	"path/filepath.Walk": true, "path/filepath.WalkDir": true, "path/filepath.EvalSymlinks": true, "path/filepath.Glob": true,
	"io/fs.ReadFile": true, "io/fs.ReadDir": true, "io/fs.WalkDir": true, "io/fs.Stat": true, "io/fs.Glob": true, "io/fs.Sub": true,
}

func TestNoFileIO(t *testing.T) {
	for _, pkg := range noFileIO {
		err := goFiles(filepath.Join("../..", pkg), false, func(p string) error {
			if strings.HasSuffix(p, "_test.go") {
				return nil
			}
			found, err := fileIO(token.NewFileSet(), p, nil)
			for _, f := range found {
				t.Errorf("%s: %s: %s takes bytes; read files in a source (source/tree)", p, f, pkg)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Each way to a file is found: an import of os, and a walk through
// filepath under another name.
func TestNoFileIOFinds(t *testing.T) {
	src := "package p\n\nimport (\n\t\"os\"\n\tfp \"path/filepath\"\n\t\"strings\"\n)\n\n" +
		"var _, _ = os.ReadFile(\"x\")\nvar _ = fp.WalkDir(\"x\", nil)\nvar _ = fp.Join(\"x\")\nvar _ = strings.Clone(\"x\")\n"
	found, err := fileIO(token.NewFileSet(), "p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[import os path/filepath.WalkDir]"; fmt.Sprint(found) != want {
		t.Errorf("found %v, want %s", found, want)
	}
}

// fileIO lists what in one file reads files: imports of fileIOImports and
// calls of fileIOCalls; src, when not nil, is its text.
func fileIO(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var found []string
	local := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if fileIOImports[path] {
			found = append(found, "import "+path)
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && fileIOCalls[local[id.Name]+"."+sel.Sel.Name] {
			found = append(found, local[id.Name]+"."+sel.Sel.Name)
		}
		return true
	})
	return found, nil
}
