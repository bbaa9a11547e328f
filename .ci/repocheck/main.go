// Command repocheck holds the repository rules of .ci/guard that need Go's
// own parser and type checker. Run from the repository root:
//
//	go run ./.ci/repocheck sizes   # no non-test, non-generated Go file over 800 lines, no function over 100
//	go run ./.ci/repocheck locks   # every mutex of non-test code is named in LOCKS.md
//	go run ./.ci/repocheck api     # the root package's API names no type of a package outside this module and the standard library
//
// Each prints one line when the rule holds and exits 1, naming every
// offender, when it does not.
package main

import (
	"bufio"
	"bytes"
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
	"path"
	"regexp"
	"sort"
	"strings"
)

// Limits of the sizes rule.
const (
	maxFileLines = 800
	maxFuncLines = 100
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./.ci/repocheck sizes|locks|api")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "sizes":
		err = sizes()
	case "locks":
		err = locks()
	case "api":
		err = api()
	default:
		err = fmt.Errorf("unknown rule %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "repocheck:", err)
		os.Exit(1)
	}
}

// goFiles returns the tracked non-test Go files that are not generated.
func goFiles() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		generated, err := isGenerated(f)
		if err != nil {
			return nil, err
		}
		if !generated {
			files = append(files, f)
		}
	}
	return files, nil
}

// generatedRE is Go's marker of generated files (go help generate).
var generatedRE = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

func isGenerated(file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if generatedRE.MatchString(line) {
			return true, nil
		}
		if strings.HasPrefix(line, "package ") {
			return false, nil
		}
	}
	return false, sc.Err()
}

// sizes checks the file and function lengths.
func sizes() error {
	files, err := goFiles()
	if err != nil {
		return err
	}
	var bad []string
	fset := token.NewFileSet()
	funcs := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			bad = append(bad, fmt.Sprintf("%s: %d lines (at most %d)", name, n, maxFileLines))
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			var what string
			switch fn := n.(type) {
			case *ast.FuncDecl:
				body, what = fn.Body, fn.Name.Name
			case *ast.FuncLit:
				body, what = fn.Body, "a function literal"
			default:
				return true
			}
			if body == nil {
				return true
			}
			funcs++
			start, end := fset.Position(n.Pos()), fset.Position(body.End())
			if lines := end.Line - start.Line + 1; lines > maxFuncLines {
				bad = append(bad, fmt.Sprintf("%s:%d: %s has %d lines (at most %d)", name, start.Line, what, lines, maxFuncLines))
			}
			return true
		})
	}
	if len(bad) > 0 {
		return errors.New("too long:\n  " + strings.Join(bad, "\n  "))
	}
	fmt.Printf("repocheck: %d Go files of at most %d lines, %d functions of at most %d\n", len(files), maxFileLines, funcs, maxFuncLines)
	return nil
}

// locks checks that every mutex declared in non-test code (a field of a
// struct type, embedded or named, a variable, in a package or in a
// function) is named in LOCKS.md (see mutexes for the names), where the
// package is the directory under the module root ("orderly" for the
// root).
func locks() error {
	doc, err := os.ReadFile("LOCKS.md")
	if err != nil {
		return err
	}
	files, err := goFiles()
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	var names []string
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := path.Dir(name)
		if pkg == "." {
			pkg = "orderly"
		}
		names = append(names, mutexes(f, pkg)...)
	}
	var missing []string
	for _, n := range names {
		if !bytes.Contains(doc, []byte("`"+n+"`")) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("mutexes not in LOCKS.md (name each as `package.Type.field`, with what it guards and its place in the lock order):\n  %s", strings.Join(missing, "\n  "))
	}
	fmt.Printf("repocheck: LOCKS.md names every one of the %d mutexes of non-test code\n", len(names))
	return nil
}

// mutexes returns the names of the mutexes f declares: struct fields as
// `pkg.Type.field` (`pkg.Type.Mutex` when embedded), package variables as
// `pkg.var`, and a function's own as `pkg.Func.var` (`pkg.Func.field` for a
// field of a struct the function declares, `pkg.Type.Method.var` in a
// method).
func mutexes(f *ast.File, pkg string) []string {
	var out []string
	var scope []string // the enclosing function, then the enclosing type
	name := func(last string) string {
		return strings.Join(append(append([]string{pkg}, scope...), last), ".")
	}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			fn := n.Name.Name
			if n.Recv != nil && len(n.Recv.List) == 1 {
				fn = recvName(n.Recv.List[0].Type) + "." + fn
			}
			scope = append(scope, fn)
			if n.Body != nil {
				ast.Inspect(n.Body, visit)
			}
			scope = scope[:len(scope)-1]
			return false
		case *ast.TypeSpec:
			st, ok := n.Type.(*ast.StructType)
			if !ok {
				return true
			}
			scope = append(scope, n.Name.Name)
			out = append(out, fields(st, name)...)
			scope = scope[:len(scope)-1]
			return false
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if n.Type != nil && isMutex(n.Type) {
					out = append(out, name(id.Name))
				}
				st, ok := n.Type.(*ast.StructType)
				if lit, isLit := valueAt(n.Values, i).(*ast.CompositeLit); !ok && isLit {
					st, ok = lit.Type.(*ast.StructType)
				}
				if ok {
					scope = append(scope, id.Name)
					out = append(out, fields(st, name)...)
					scope = scope[:len(scope)-1]
				}
			}
			for _, v := range n.Values {
				if lit, ok := v.(*ast.CompositeLit); ok {
					for _, e := range lit.Elts {
						ast.Inspect(e, visit)
					}
				} else {
					ast.Inspect(v, visit)
				}
			}
			return false
		case *ast.CompositeLit:
			if st, ok := n.Type.(*ast.StructType); ok {
				out = append(out, fields(st, name)...)
			}
		}
		return true
	}
	ast.Inspect(f, visit)
	return out
}

// valueAt returns values[i], or nil.
func valueAt(values []ast.Expr, i int) ast.Expr {
	if i < len(values) {
		return values[i]
	}
	return nil
}

// fields returns the names of a struct's mutex fields.
func fields(st *ast.StructType, name func(string) string) []string {
	var out []string
	for _, field := range st.Fields.List {
		if !isMutex(field.Type) {
			continue
		}
		if len(field.Names) == 0 { // embedded
			out = append(out, name(typeName(field.Type)))
		}
		for _, n := range field.Names {
			out = append(out, name(n.Name))
		}
	}
	return out
}

// recvName is the type name of a method's receiver.
func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return fmt.Sprint(e)
}

func isMutex(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "sync" && (sel.Sel.Name == "Mutex" || sel.Sel.Name == "RWMutex")
}

func typeName(e ast.Expr) string {
	if sel, ok := e.(*ast.SelectorExpr); ok {
		return sel.Sel.Name
	}
	return fmt.Sprint(e)
}

// api type-checks the root package from the export data of its
// dependencies and fails when an exported name's signature, fields or
// underlying type mentions a named type of a package outside this module
// and the standard library.
func api() error {
	module, err := goList("-m", "-f", "{{.Path}}")
	if err != nil {
		return err
	}
	mod := strings.TrimSpace(module)
	out, err := goList("-deps", "-export", "-f", "{{.ImportPath}}\t{{.Export}}\t{{.Standard}}", ".")
	if err != nil {
		return err
	}
	exports := map[string]string{}
	foreign := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		parts := strings.Split(line, "\t")
		if len(parts) != 3 {
			continue
		}
		exports[parts[0]] = parts[1]
		if parts[2] != "true" && parts[0] != mod && !strings.HasPrefix(parts[0], mod+"/") {
			foreign[parts[0]] = true
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(p string) (io.ReadCloser, error) {
		f, ok := exports[p]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", p)
		}
		return os.Open(f)
	})
	pkg, err := imp.Import(mod)
	if err != nil {
		return err
	}
	var bad []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		for _, p := range mentioned(obj.Type(), isTypeName(obj)) {
			if foreign[p] {
				bad = append(bad, fmt.Sprintf("%s mentions a type of %s", name, p))
			}
		}
		if tn, ok := obj.(*types.TypeName); ok {
			if named, ok := tn.Type().(*types.Named); ok {
				for i := range named.NumMethods() {
					m := named.Method(i)
					if !m.Exported() {
						continue
					}
					for _, p := range mentioned(m.Type(), false) {
						if foreign[p] {
							bad = append(bad, fmt.Sprintf("%s.%s mentions a type of %s", name, m.Name(), p))
						}
					}
				}
			}
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return errors.New("the root package's API names foreign types (wrap them in Orderly's own, or keep them behind internal options):\n  " + strings.Join(bad, "\n  "))
	}
	fmt.Printf("repocheck: the root package's %d exported names mention no type outside this module and the standard library\n", len(scope.Names()))
	return nil
}

func isTypeName(obj types.Object) bool {
	_, ok := obj.(*types.TypeName)
	return ok
}

// mentioned returns the packages of the named types t mentions: in a
// signature, its parameters and results; in a struct, its exported fields;
// in a declared type, its underlying type (when decl is set).
func mentioned(t types.Type, decl bool) []string {
	seen := map[types.Type]bool{}
	var out []string
	var walk func(t types.Type, top bool)
	walk = func(t types.Type, top bool) {
		if seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Named:
			if obj := t.Obj(); obj.Pkg() != nil {
				out = append(out, obj.Pkg().Path())
			}
			for i := range t.TypeArgs().Len() {
				walk(t.TypeArgs().At(i), false)
			}
			if top {
				walk(t.Underlying(), false)
			}
		case *types.Alias:
			walk(types.Unalias(t), top)
		case *types.Pointer:
			walk(t.Elem(), top)
		case *types.Slice:
			walk(t.Elem(), false)
		case *types.Array:
			walk(t.Elem(), false)
		case *types.Map:
			walk(t.Key(), false)
			walk(t.Elem(), false)
		case *types.Chan:
			walk(t.Elem(), false)
		case *types.Signature:
			for i := range t.Params().Len() {
				walk(t.Params().At(i).Type(), false)
			}
			for i := range t.Results().Len() {
				walk(t.Results().At(i).Type(), false)
			}
		case *types.Struct:
			for i := range t.NumFields() {
				if f := t.Field(i); f.Exported() {
					walk(f.Type(), false)
				}
			}
		case *types.Interface:
			for i := range t.NumMethods() {
				if m := t.Method(i); m.Exported() {
					walk(m.Type(), false)
				}
			}
		}
	}
	walk(t, decl)
	return out
}

func goList(args ...string) (string, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}
