package graph

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/ext"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Variable names with a meaning of their own in expressions.
const (
	varSchema = "schema" // the instance
	varEach   = "each"   // one item of a collection, in readyWhen
)

// baseEnv is the CEL environment every graph starts from: the standard
// library, optional types, and the libraries the Kubernetes API server
// offers CRD validation rules (lists, regex, URLs, quantity, IP, CIDR,
// format, semver, sets, strings, two-variable comprehensions), plus
// encoders, math and bindings. Unlike the API server it allows
// heterogeneous list and map literals ({"name": "x", "port": 80}), as kro
// does. Building it is expensive, so it is built once per process.
var baseEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		ext.Lists(ext.ListsVersion(3)),
		ext.TwoVarComprehensions(),
		ext.Encoders(),
		ext.Math(),
		ext.Bindings(),
		library.URLs(),
		library.Regex(),
		library.Lists(),
		library.Quantity(),
		library.IP(),
		library.CIDR(),
		library.Format(),
		library.SemverLib(library.SemverVersion(1)),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
		),
	)
})

// programOptions bound the cost of one evaluation, like the API server
// does, so a runaway comprehension cannot stall a reconcile.
var programOptions = []cel.ProgramOption{
	cel.EvalOptions(cel.OptOptimize),
	cel.CostLimit(celconfig.PerCallLimit),
}

// typesEnv extends the base environment with the object types of decls.
func typesEnv(decls []*apiservercel.DeclType) (*cel.Env, error) {
	base, err := baseEnv()
	if err != nil {
		return nil, err
	}
	if len(decls) == 0 {
		return base, nil
	}
	provider := apiservercel.NewDeclTypeProvider(decls...)
	provider.SetRecognizeKeywordAsFieldName(true)
	opts, err := provider.EnvOptions(base.CELTypeProvider())
	if err != nil {
		return nil, err
	}
	return base.Extend(opts...)
}

// withVariables extends env with variables, in a stable order.
func withVariables(env *cel.Env, vars map[string]*cel.Type) (*cel.Env, error) {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	opts := make([]cel.EnvOption, 0, len(names))
	for _, n := range names {
		opts = append(opts, cel.Variable(n, vars[n]))
	}
	return env.Extend(opts...)
}

// program is one compiled expression.
type program struct {
	// written is the expression as it appears in the RGD, ${} included.
	written string
	prog    cel.Program
	out     *cel.Type
	// refs are the names this expression reads from Values ("schema" and
	// resource ids), sorted. Evaluation waits (ErrPending) until all are
	// present.
	refs []string
}

// compileExpr parses, type-checks and plans src in env.
func compileExpr(env *cel.Env, src, written string, valueNames map[string]bool) (*program, error) {
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, errorf(ErrExpression, "%s", issueMessages(iss))
	}
	prog, err := env.Program(ast, programOptions...)
	if err != nil {
		return nil, errorf(ErrExpression, "%v", err)
	}
	p := &program{written: written, prog: prog, out: ast.OutputType()}
	for _, id := range identifiers(ast) {
		if valueNames[id] {
			p.refs = append(p.refs, id)
		}
	}
	return p, nil
}

// identifiers returns the distinct identifiers an expression uses, sorted.
func identifiers(ast *cel.Ast) []string {
	seen := map[string]bool{}
	root := celast.NavigateAST(ast.NativeRep())
	for _, e := range celast.MatchDescendants(root, celast.KindMatcher(celast.IdentKind)) {
		seen[e.AsIdent()] = true
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// parsedIdentifiers parses src without type-checking and returns its
// identifiers, or nil if it does not parse (compiling reports that).
func parsedIdentifiers(env *cel.Env, src string) []string {
	ast, iss := env.Parse(src)
	if iss.Err() != nil {
		return nil
	}
	return identifiers(ast)
}

// issueMessages turns CEL issues into one line: the messages without the
// source excerpts CEL adds.
func issueMessages(iss *cel.Issues) string {
	errs := iss.Errors()
	if len(errs) == 0 {
		return strings.TrimSpace(iss.Err().Error())
	}
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, e.Message)
	}
	return strings.Join(msgs, "; ")
}

// typeName formats a CEL type for messages.
func typeName(t *cel.Type) string {
	if t == nil {
		return "dyn"
	}
	return t.String()
}

// gvkTypeName names the CEL object type of a kind.
func gvkTypeName(group, version, kind string) string {
	if group == "" {
		group = "core"
	}
	r := strings.NewReplacer(".", "_", "-", "_")
	return fmt.Sprintf("%skind.%s.%s.%s", typeNamePrefix, r.Replace(group), version, kind)
}

// typeNamePrefix starts the names of our object types. CEL resolves a.b.c
// as a type name before it tries field selection, so type names must never
// look like a variable path; resource ids cannot contain "_".
const typeNamePrefix = "fg__"
