// Command codestats prints the shape of a Go tree: packages, files, exported identifiers and methods per type.
//
// Usage: codestats DIR. Only non-test files count: packages are the
// directories holding them; files, those outside cmd/, hack/ and e2e/;
// exported identifiers, the package-level names and methods of non-main
// packages; methods, those declared on each named type (value and pointer
// receivers), those over 15 counted; the eight largest packages (by files)
// and types (by methods) are listed. Another
// commit's figures: `git archive REV | tar -x -C DIR`, then codestats DIR.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: codestats DIR")
		os.Exit(2)
	}
	st, err := measure(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "codestats:", err)
		os.Exit(1)
	}
	fmt.Print(st)
}

// stats are a tree's figures.
type stats struct {
	packages, files, exported int
	perPackage                map[string]int // non-test files by directory
	methods                   map[string]int // by "dir.Type"
}

func measure(root string) (stats, error) {
	st := stats{perPackage: map[string]int{}, methods: map[string]int{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if n := d.Name(); rel != "." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		st.perPackage[dir]++
		if top, _, _ := strings.Cut(dir, "/"); top != "cmd" && top != "hack" && top != "e2e" {
			st.files++
		}
		st.add(dir, f)
		return nil
	})
	st.packages = len(st.perPackage)
	return st, err
}

// add counts one file's methods and exported identifiers.
func (st *stats) add(dir string, f *ast.File) {
	api := f.Name.Name != "main"
	count := func(id *ast.Ident) {
		if api && id.IsExported() {
			st.exported++
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			count(d.Name)
			if d.Recv != nil {
				st.methods[dir+"."+receiver(d.Recv.List[0].Type)]++
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					count(s.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						count(n)
					}
				}
			}
		}
	}
}

// receiver is the type name of a method's receiver: T, *T, T[P], *T[P].
func receiver(t ast.Expr) string {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", t)
		}
	}
}

func (st stats) String() string {
	over := 0
	for _, n := range st.methods {
		if n > 15 {
			over++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "packages %d, non-test files outside cmd/hack/e2e %d, exported identifiers %d, types with more than 15 methods %d\n",
		st.packages, st.files, st.exported, over)
	fmt.Fprintf(&b, "most files: %s\nmost methods: %s\n", most(st.perPackage), most(st.methods))
	return b.String()
}

// most lists the eight largest counts of m, largest first.
func most(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := m[b] - m[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	out := make([]string, 0, 8)
	for _, k := range keys[:min(8, len(keys))] {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(out, ", ")
}
