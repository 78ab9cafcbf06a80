// Package codecheck holds the checks on the module's code that no compiler or vet makes, and the figures they read.
package codecheck

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

// maxMethods is the most methods a type may have: past it, a type does
// more than one job (serve.Server had 36 before it was split in three).
const maxMethods = 15

// Stats are the figures of a Go tree's non-test files: the checks read
// the methods per type, closing notes compare all of them across commits
// (cmd/dev/codestats).
type Stats struct {
	// PerPackage counts the files of each directory, relative to the root.
	PerPackage map[string]int
	// Files counts those outside cmd/, hack/ and e2e/.
	Files int
	// Exported counts the package-level names and methods of non-main
	// packages that are exported.
	Exported int
	// Methods counts the methods declared on each named type (value and
	// pointer receivers), and the functions of its package that take it
	// (T or *T) first, by "dir.Type": a method written as a free function
	// is one more job of the type all the same.
	Methods map[string]int

	free     map[string]int  // functions taking "dir.T" first
	declared map[string]bool // the types declared, by "dir.T"
}

// settle adds the free functions taking a type first to its methods,
// once every file is read.
func (st *Stats) settle() {
	for typ, n := range st.free {
		if st.declared[typ] {
			st.Methods[typ] += n
		}
	}
	st.free, st.declared = nil, nil
}

// Measure reads the non-test Go files of the module at root (see goFiles;
// the modules nested in it, such as hack/'s tool builds, aside).
func Measure(root string) (*Stats, error) {
	st := newStats()
	fset := token.NewFileSet()
	err := goFiles(root, false, func(p string) error {
		if strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		return st.add(fset, p, filepath.ToSlash(dir), nil)
	})
	st.settle()
	return st, err
}

func newStats() *Stats {
	return &Stats{PerPackage: map[string]int{}, Methods: map[string]int{}, free: map[string]int{}, declared: map[string]bool{}}
}

// goFiles calls f with every Go file under root, tests included, testdata
// and hidden folders aside, and with nested, those of the modules nested
// in root's, until f fails.
func goFiles(root string, nested bool, f func(path string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() && p != root && !nested {
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		return f(p)
	})
}

// add counts one file of the package in dir; src, when not nil, is its
// text.
func (st *Stats) add(fset *token.FileSet, name, dir string, src any) error {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	st.PerPackage[dir]++
	if top, _, _ := strings.Cut(dir, "/"); top != "cmd" && top != "hack" && top != "e2e" {
		st.Files++
	}
	api := f.Name.Name != "main"
	count := func(id *ast.Ident) {
		if api && id.IsExported() {
			st.Exported++
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			count(d.Name)
			if d.Recv != nil && len(d.Recv.List) > 0 {
				if typ := receiver(d.Recv.List[0].Type); typ != "" {
					st.Methods[dir+"."+typ]++
				}
			} else if ps := d.Type.Params.List; len(ps) > 0 {
				if typ := receiver(ps[0].Type); typ != "" {
					st.free[dir+"."+typ]++
				}
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					count(s.Name)
					st.declared[dir+"."+s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						count(n)
					}
				}
			}
		}
	}
	return nil
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
			return ""
		}
	}
}

// String is the figures in three lines: the totals, then the eight
// largest packages (by files) and types (by methods).
func (st *Stats) String() string {
	over := 0
	for _, n := range st.Methods {
		if n > maxMethods {
			over++
		}
	}
	return fmt.Sprintf("packages %d, non-test files outside cmd/hack/e2e %d, exported identifiers %d, types with more than %d methods %d\nmost files: %s\nmost methods: %s\n",
		len(st.PerPackage), st.Files, st.Exported, maxMethods, over, most(st.PerPackage), most(st.Methods))
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
