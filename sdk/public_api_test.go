package sdk

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The façade may name the public hub's and apis' types, but none of
// internal/'s: an edit under internal/ must not change the public API
// unseen, and go doc must show every field and default.
func TestNoPublicTypeAliasesAnInternalOne(t *testing.T) {
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
		internals := map[string]bool{}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(path, "/internal/") {
				pkg := path[strings.LastIndex(path, "/")+1:]
				if imp.Name != nil {
					pkg = imp.Name.Name
				}
				internals[pkg] = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Assign.IsValid() || !ts.Name.IsExported() {
				return true
			}
			if sel, ok := ts.Type.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && internals[id.Name] {
					t.Errorf("%s: %s is an alias of %s.%s; define it here", fset.Position(ts.Pos()), ts.Name, id.Name, sel.Sel)
				}
			}
			return true
		})
	}
}
