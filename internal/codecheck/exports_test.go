package codecheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An exported identifier nobody outside its package uses is API nobody
// asked for: it widens what a change must keep working. Unexport it, or
// delete it.
func TestExportsHaveUsers(t *testing.T) {
	found, examined := unusedIn(t, "../..")
	// Fewer would mean the module was not found, or not read whole.
	if examined < 200 {
		t.Fatalf("only %d exported identifiers examined", examined)
	}
	if len(found) == 0 {
		return
	}
	t.Errorf("%d exported identifiers have no user outside their package (unexport or delete them):\n%s",
		len(found), strings.Join(found, "\n"))
}

// listed is the part of `go list -json` this package reads.
type listed struct {
	ImportPath   string
	Dir          string
	Export       string
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
	Module       *struct{ Main bool }
}

// unused lists, as "pkg.Name" or "pkg.Type.Method", the exported
// package-level identifiers and methods of the module rooted at dir that no
// other package (tests of other packages included) refers to. A method that
// satisfies an interface the module declares or imports, with its receiver
// or a pointer to it, counts as used: callers reach it through the
// interface. So do Unwrap, Is and As, package errors' conventions.
func unused(dir string) (found []string, examined int, err error) {
	pkgs, exports, err := list(dir)
	if err != nil {
		return nil, 0, err
	}
	c := &checker{
		fset:     token.NewFileSet(),
		declared: map[string]bool{}, used: map[string]bool{}, objects: map[string]types.Object{},
		ifaces:   map[string][]*types.Interface{},
		seenPkgs: map[*types.Package]bool{},
	}
	c.interfaceMethods(types.Universe.Lookup("error"))
	c.imp = importer.ForCompiler(c.fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, p := range pkgs {
		// The package with its internal tests, then its external tests.
		if err := c.check(p, append(slices.Clone(p.GoFiles), p.TestGoFiles...), true); err != nil {
			return nil, 0, err
		}
		if err := c.check(p, p.XTestGoFiles, false); err != nil {
			return nil, 0, err
		}
	}
	// After every check: an import seen early through another package's
	// export data is complete only once something imports it.
	for _, pkg := range c.checked {
		c.importedInterfaces(pkg)
	}
	reach(c.used, c.objects)
	for k := range c.declared {
		if !c.used[k] && !c.meetsInterface(c.objects[k]) {
			found = append(found, k)
		}
	}
	slices.Sort(found)
	return found, len(c.declared), nil
}

// checker gathers, package by package, what the module declares and uses.
type checker struct {
	fset     *token.FileSet
	imp      types.Importer
	declared map[string]bool // exported objects and methods, by key
	used     map[string]bool // keys referred to from another package
	objects  map[string]types.Object
	ifaces   map[string][]*types.Interface // the interfaces in sight, by method name
	seenPkgs map[*types.Package]bool
	checked  []*types.Package
}

// meetsInterface reports whether o is a method by which its receiver type,
// or a pointer to it, satisfies an interface in sight, or one of package
// errors' conventions.
func (c *checker) meetsInterface(o types.Object) bool {
	f, ok := o.(*types.Func)
	if !ok || f.Signature().Recv() == nil {
		return false
	}
	switch f.Name() {
	case "Unwrap", "Is", "As":
		return true
	}
	recv := f.Signature().Recv().Type()
	if p, ok := recv.(*types.Pointer); ok {
		recv = p.Elem()
	}
	for _, it := range c.ifaces[f.Name()] {
		if types.Implements(recv, it) || types.Implements(types.NewPointer(recv), it) {
			return true
		}
	}
	return false
}

// check type-checks one unit of p (its files with or without the package's
// own declarations) and records what it declares and uses.
func (c *checker) check(p listed, names []string, declares bool) error {
	if len(names) == 0 {
		return nil
	}
	files, err := parse(c.fset, p.Dir, names)
	if err != nil {
		return err
	}
	// Type errors (a test variant's import cycle through export data) leave
	// the uses that were resolved, which is all this needs.
	conf := types.Config{Importer: c.imp, Error: func(error) {}}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}, Defs: map[*ast.Ident]types.Object{}}
	pkg, _ := conf.Check(p.ImportPath, c.fset, files, info)
	if declares {
		collectDeclared(c.fset, pkg, c.declared, c.objects)
	}
	use := func(o types.Object) {
		if k := key(o); k != "" && o.Pkg().Path() != p.ImportPath {
			c.used[k] = true
		}
	}
	for _, o := range info.Uses {
		use(o)
	}
	for _, s := range info.Selections {
		use(s.Obj())
	}
	for _, o := range info.Defs {
		c.interfaceMethods(o)
	}
	c.checked = append(c.checked, pkg)
	return nil
}

// importedInterfaces adds the methods of the interfaces pkg's imports
// declare, transitively.
func (c *checker) importedInterfaces(pkg *types.Package) {
	if pkg == nil || c.seenPkgs[pkg] {
		return
	}
	c.seenPkgs[pkg] = true
	for _, name := range pkg.Scope().Names() {
		c.interfaceMethods(pkg.Scope().Lookup(name))
	}
	for _, imp := range pkg.Imports() {
		c.importedInterfaces(imp)
	}
}

func (c *checker) interfaceMethods(o types.Object) {
	tn, ok := o.(*types.TypeName)
	if !ok {
		return
	}
	if n, ok := tn.Type().(*types.Named); ok && n.TypeParams().Len() > 0 {
		return // a generic interface is met only by an instance
	}
	if it, ok := tn.Type().Underlying().(*types.Interface); ok {
		for m := range it.Methods() {
			c.ifaces[m.Name()] = append(c.ifaces[m.Name()], it)
		}
	}
}

func list(dir string) ([]listed, map[string]string, error) {
	cmd := exec.Command("go", "list", "-e", "-test", "-export", "-deps", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list: %w: %s", err, stderr.Bytes())
	}
	var own []listed
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("go list output: %w", err)
		}
		if strings.Contains(p.ImportPath, " [") || strings.HasSuffix(p.ImportPath, ".test") {
			continue
		}
		if p.Export != "" {
			exports[p.ImportPath] = p.Export
		}
		if p.Module != nil && p.Module.Main {
			own = append(own, p)
		}
	}
	return own, exports, nil
}

func parse(fset *token.FileSet, dir string, names []string) ([]*ast.File, error) {
	var files []*ast.File
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// collectDeclared records the exported package-level objects and the
// exported methods of package-level types declared in non-test files.
func collectDeclared(fset *token.FileSet, pkg *types.Package, into map[string]bool, objects map[string]types.Object) {
	if pkg == nil || pkg.Name() == "main" {
		return
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		o := scope.Lookup(name)
		if strings.HasSuffix(fset.Position(o.Pos()).Filename, "_test.go") {
			continue
		}
		if o.Exported() {
			into[key(o)] = true
		}
		objects[key(o)] = o
		tn, ok := o.(*types.TypeName)
		if !ok {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		for m := range named.Methods() {
			if m.Exported() && o.Exported() {
				into[key(m)] = true
			}
			objects[key(m)] = m
		}
	}
}

// key names a package-level object "path.Name" and a method "path.Type.Name".
func key(o types.Object) string {
	if o == nil || o.Pkg() == nil {
		return ""
	}
	if f, ok := o.(*types.Func); ok {
		if recv := f.Signature().Recv(); recv != nil {
			t := recv.Type()
			if p, ok := t.(*types.Pointer); ok {
				t = p.Elem()
			}
			if n, ok := t.(*types.Named); ok {
				return o.Pkg().Path() + "." + n.Obj().Name() + "." + o.Name()
			}
			return ""
		}
	}
	if o.Parent() != o.Pkg().Scope() {
		return ""
	}
	return o.Pkg().Path() + "." + o.Name()
}

// reach marks as used what a caller of a used identifier meets without
// naming it: the named types in its signature or fields, and the constants
// of a used type.
func reach(used map[string]bool, objects map[string]types.Object) {
	consts := map[string][]string{}
	for k, o := range objects {
		if c, ok := o.(*types.Const); ok {
			if n, ok := c.Type().(*types.Named); ok {
				t := key(n.Obj())
				consts[t] = append(consts[t], k)
			}
		}
	}
	var queue []string
	for k := range used {
		queue = append(queue, k)
	}
	mark := func(k string) {
		if k != "" && !used[k] {
			used[k] = true
			queue = append(queue, k)
		}
	}
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		o, ok := objects[k]
		if !ok {
			continue
		}
		t := o.Type()
		if _, ok := o.(*types.TypeName); ok {
			t = t.Underlying()
			for _, c := range consts[k] {
				mark(c)
			}
		}
		for _, n := range namedIn(t, map[types.Type]bool{}) {
			mark(key(n.Obj()))
		}
	}
}

// namedIn lists the named types t is built of, down to the first named
// type on each path: through pointers, containers, signatures, exported
// struct fields and interface methods.
func namedIn(t types.Type, seen map[types.Type]bool) []*types.Named {
	if t == nil || seen[t] {
		return nil
	}
	seen[t] = true
	var parts []types.Type
	switch t := t.(type) {
	case *types.Named:
		out := []*types.Named{t}
		for a := range t.TypeArgs().Types() {
			out = append(out, namedIn(a, seen)...)
		}
		return out
	case interface{ Elem() types.Type }: // pointer, slice, array, chan
		parts = append(parts, t.Elem())
		if m, ok := t.(*types.Map); ok {
			parts = append(parts, m.Key())
		}
	case *types.Signature:
		for v := range t.Params().Variables() {
			parts = append(parts, v.Type())
		}
		for v := range t.Results().Variables() {
			parts = append(parts, v.Type())
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() || f.Embedded() {
				parts = append(parts, f.Type())
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			parts = append(parts, m.Type())
		}
	}
	var out []*types.Named
	for _, p := range parts {
		out = append(out, namedIn(p, seen)...)
	}
	return out
}

// The check finds what testdata/mod declares without a user elsewhere, and
// only that.
func TestUnusedFinds(t *testing.T) {
	got, _ := unusedIn(t, "testdata/mod")
	want := []string{"example.com/mod/a.Result.Tidy", "example.com/mod/a.Unused", "example.com/mod/a.UnusedConst"}
	if !slices.Equal(got, want) {
		t.Errorf("unused = %q, want %q", got, want)
	}
}

func unusedIn(t *testing.T, dir string) ([]string, int) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	found, examined, err := unused(abs)
	if err != nil {
		t.Fatal(err)
	}
	return found, examined
}
