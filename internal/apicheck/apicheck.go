// Package apicheck reads a public package's source and lists the names
// that are not defined where they are documented: type aliases, and
// exported constants or variables that only name one of internal/'s. Tests
// of the public packages use it so that an edit under internal/ cannot
// change their API unseen.
package apicheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Options says what counts as a finding.
type Options struct {
	// AnyAlias reports every exported type alias; otherwise only aliases
	// of a type in a package under internal/. Defaults to false.
	AnyAlias bool
	// InternalValues reports exported constants and variables that are
	// only a selector on an internal package (a re-exported sentinel
	// error, say). Defaults to false.
	InternalValues bool
	// EngineDefaults, with InternalValues, lets an exported constant whose
	// name starts with "Default" name an internal one: a default is
	// declared once, by the code that fills it in, and the public
	// constant's comment states its value. Defaults to false.
	EngineDefaults bool
}

// Findings returns one line per finding in the non-test Go files of dir,
// each naming its position.
func Findings(dir string, opts Options) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	fset := token.NewFileSet()
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", name, err)
		}
		out = append(out, fileFindings(fset, f, opts)...)
	}
	return out, nil
}

func fileFindings(fset *token.FileSet, f *ast.File, opts Options) []string {
	internals := internalImports(f)
	var out []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Assign.IsValid() && s.Name.IsExported() && (opts.AnyAlias || refersTo(s.Type, internals)) {
					out = append(out, fmt.Sprintf("%s: type %s is an alias; define it here", fset.Position(s.Pos()), s.Name))
				}
			case *ast.ValueSpec:
				if !opts.InternalValues {
					continue
				}
				for i, n := range s.Names {
					if opts.EngineDefaults && gd.Tok == token.CONST && strings.HasPrefix(n.Name, "Default") {
						continue
					}
					if n.IsExported() && i < len(s.Values) && refersTo(s.Values[i], internals) {
						out = append(out, fmt.Sprintf("%s: %s only names an internal value; define it here", fset.Position(n.Pos()), n))
					}
				}
			}
		}
	}
	return out
}

// internalImports returns the names under which f imports packages under
// internal/.
func internalImports(f *ast.File) map[string]bool {
	out := map[string]bool{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(path, "/internal/") {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = true
	}
	return out
}

// refersTo reports whether expr is a selector on one of the packages.
func refersTo(expr ast.Expr, packages map[string]bool) bool {
	sel, ok := expr.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && packages[id.Name]
}
