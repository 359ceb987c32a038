package spoke

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The public API is defined here, where it is documented: no type alias
// (of an internal type or any other), and no exported constant or variable
// that is only a name for one of internal/'s, so that go doc shows every
// field, value and default.
func TestThePublicAPIIsDefinedHere(t *testing.T) {
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		internals := internalImports(f)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					assert.False(t, s.Assign.IsValid(), "%s: type %s is an alias; define it here", fset.Position(s.Pos()), s.Name)
				case *ast.ValueSpec:
					for i, n := range s.Names {
						if n.IsExported() && i < len(s.Values) && refersTo(s.Values[i], internals) {
							t.Errorf("%s: %s only names an internal value; define it here", fset.Position(n.Pos()), n)
						}
					}
				}
			}
		}
	}
}

// internalImports returns the names under which f imports packages under
// the module's internal/.
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
