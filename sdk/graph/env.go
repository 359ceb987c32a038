package graph

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Variable names with a meaning of their own in expressions.
const (
	varSchema = "schema" // the instance
	varEach   = "each"   // one item of a collection, in readyWhen
)

// kroLibraries are the CEL libraries kro v0.9.3 offers in every
// expression (pkg/cel/environment.go BaseDeclarations), in the same
// versions: the standard library, optional types, cel-go's lists, strings,
// encoders, bindings and two-variable comprehensions, the Kubernetes
// libraries (lists, URLs, regex, quantity, IP, CIDR, semver) and kro's own
// (random, maps, json, hash, list editing).
func kroLibraries() []cel.EnvOption {
	return []cel.EnvOption{
		ext.TwoVarComprehensions(),
		ext.Lists(),
		ext.Strings(),
		ext.Bindings(),
		cel.OptionalTypes(),
		ext.Encoders(),
		library.Lists(),
		library.URLs(),
		library.Regex(),
		library.Quantity(),
		library.IP(),
		library.CIDR(),
		cel.Lib(randomLib{}),
		cel.Lib(mapsLib{}),
		cel.Lib(jsonLib{}),
		cel.Lib(hashLib{}),
		cel.Lib(indexListsLib{}),
		cel.Lib(runtimeLib{}),
	}
}

// extensionLibraries are what fleetgraph offers beyond kro (see
// extensions.go): cel-go's sets and math, the Kubernetes format library,
// semver's normalize overloads, and comparisons across numeric types.
func extensionLibraries() []cel.EnvOption {
	return []cel.EnvOption{
		ext.Sets(),
		ext.Math(),
		library.Format(),
		library.SemverLib(library.SemverVersion(1)),
		cel.CrossTypeNumericComparisons(true),
	}
}

// commonOptions apply to both environments. (The literal validators run
// after each check, where an expression has a literal to validate: see
// validateLiterals.)
func commonOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
	}
}

// fullEnv is the environment of a default compile: kro's libraries plus
// our extensions. Like kro, and unlike the API server, it allows
// heterogeneous list and map literals ({"name": "x", "port": 80}).
// Building it is expensive, so it is built once per process.
var fullEnv = sync.OnceValues(func() (*cel.Env, error) {
	opts := append(commonOptions(), kroLibraries()...)
	return withConditionTypes(cel.NewEnv(append(opts, extensionLibraries()...)...))
})

// kroEnv is the environment of a strict compile: kro's libraries only.
var kroEnv = sync.OnceValues(func() (*cel.Env, error) {
	opts := append(commonOptions(), kroLibraries()...)
	return withConditionTypes(cel.NewEnv(append(opts, library.SemverLib())...))
})

// withConditionTypes declares the object types of runtimeLib.
func withConditionTypes(env *cel.Env, err error) (*cel.Env, error) {
	if err != nil {
		return nil, err
	}
	te, err := extendTypes(env, []*apiservercel.DeclType{conditionDecl, runtimeDecl})
	if err != nil {
		return nil, err
	}
	return te.env, nil
}

// baseEnv returns the environment Options.Strict selects.
func baseEnv(strict bool) (*cel.Env, error) {
	if strict {
		return kroEnv()
	}
	return fullEnv()
}

// planner turns checked expressions into interpretables sharing one
// function dispatcher. cel.Env.Program builds a fresh dispatcher holding
// every overload of every library for each program, which costs more than
// parsing and checking together; our extended environments only add
// variables and types, never functions, so one dispatcher serves them all.
type planner struct {
	disp  interpreter.Dispatcher
	guard interpreter.InterpretableDecorator
}

var sharedPlanner = sync.OnceValues(func() (*planner, error) {
	env, err := fullEnv()
	if err != nil {
		return nil, err
	}
	disp := interpreter.NewDispatcher()
	for _, fn := range env.Functions() {
		bindings, err := fn.Bindings()
		if err != nil {
			return nil, err
		}
		if err := disp.Add(bindings...); err != nil {
			return nil, err
		}
	}
	return &planner{disp: disp, guard: guardCalls(disp, env.Functions())}, nil
})

// plan builds the interpretable of a checked expression. Every call goes
// through a guard that prices it from its arguments before it runs (see
// guard.go), and every comprehension step asks the evaluation's meter
// whether to go on (see meter.go): one evaluation is bounded in cost, time
// and the size of what it builds. Constant regular expressions are
// compiled here, by the guard, once.
func (p *planner) plan(env *cel.Env, ast *cel.Ast) (interpreter.Interpretable, error) {
	attrs := interpreter.NewAttributeFactory(env.Container, env.CELTypeAdapter(), env.CELTypeProvider())
	interp := interpreter.NewInterpreter(p.disp, env.Container, env.CELTypeProvider(), env.CELTypeAdapter(), attrs)
	if unmetered {
		return interp.NewInterpretable(ast.NativeRep(),
			interpreter.CustomDecorator(lazyOptionalOr),
			interpreter.Optimize(),
			interpreter.CompileRegexConstants(regexConstants...),
		)
	}
	return interp.NewInterpretable(ast.NativeRep(),
		interpreter.CustomDecorator(lazyOptionalOr),
		interpreter.Optimize(),
		interpreter.CustomDecorator(p.guard),
		interpreter.InterruptableEval(),
	)
}

// unmetered plans and evaluates without guards, meter or sizer. Only the
// benchmark that measures what they cost sets it, before it compiles.
var unmetered bool

// typedEnv is an environment that knows a set of object types.
type typedEnv struct {
	env      *cel.Env
	provider *apiservercel.DeclTypeProvider
}

// findDeclType looks a type up in this environment's provider.
func (t *typedEnv) findDeclType(name string) (*apiservercel.DeclType, bool) {
	return t.provider.FindDeclType(name)
}

// extendTypes returns env extended with the object types of decls (and
// whatever env already knows), plus extra options.
func extendTypes(env *cel.Env, decls []*apiservercel.DeclType, extra ...cel.EnvOption) (*typedEnv, error) {
	provider := apiservercel.NewDeclTypeProvider(decls...)
	provider.SetRecognizeKeywordAsFieldName(true)
	withTypes, err := provider.WithTypeProvider(env.CELTypeProvider())
	if err != nil {
		return nil, err
	}
	open := &openFieldsProvider{withTypes}
	opts := []cel.EnvOption{cel.CustomTypeProvider(open), cel.CustomTypeAdapter(open)}
	out, err := env.Extend(append(opts, extra...)...)
	if err != nil {
		return nil, err
	}
	return &typedEnv{env: out, provider: provider}, nil
}

// kindEnvs caches, per set of child-kind types, the base environment
// extended with them. Registering the types of a large kind (a Deployment
// nests hundreds of object types) costs more than compiling a small graph,
// and the same kinds come back in graph after graph.
var kindEnvs = struct {
	sync.Mutex
	m map[string]*typedEnv
}{m: map[string]*typedEnv{}}

const kindEnvsSize = 64

// kindsEnv returns the base environment extended with decls, cached by the
// identity of decls (which cachedDeclType keeps stable).
func kindsEnv(decls []*apiservercel.DeclType, strict bool) (*typedEnv, error) {
	keys := make([]string, len(decls), len(decls)+1)
	for i, d := range decls {
		keys[i] = fmt.Sprintf("%p", d)
	}
	sort.Strings(keys)
	keys = append(keys, fmt.Sprint(strict))
	key := strings.Join(keys, ",")
	kindEnvs.Lock()
	te, ok := kindEnvs.m[key]
	kindEnvs.Unlock()
	if ok {
		return te, nil
	}
	base, err := baseEnv(strict)
	if err != nil {
		return nil, err
	}
	if te, err = extendTypes(base, decls); err != nil {
		return nil, err
	}
	kindEnvs.Lock()
	if len(kindEnvs.m) >= kindEnvsSize {
		clear(kindEnvs.m)
	}
	kindEnvs.m[key] = te
	kindEnvs.Unlock()
	return te, nil
}

// withVariables extends env with variables, in a stable order.
func withVariables(env *cel.Env, vars map[string]*cel.Type) (*cel.Env, error) {
	return env.Extend(variables(vars)...)
}

func variables(vars map[string]*cel.Type) []cel.EnvOption {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	opts := make([]cel.EnvOption, 0, len(names))
	for _, n := range names {
		opts = append(opts, cel.Variable(n, vars[n]))
	}
	return opts
}

// program is one compiled expression.
type program struct {
	// written is the expression as it appears in the RGD, ${} included.
	written string
	prog    interpreter.Interpretable
	out     *cel.Type
	// refs are the names this expression reads from Values ("schema" and
	// resource ids), sorted. Evaluation waits (ErrPending) until all are
	// present.
	refs []string
	// extensions names the fleetgraph extensions the expression uses.
	extensions []string
	// formats are the format trees of the refs that hold formatted
	// strings, nil when none does.
	formats map[string]*formatTree
}

// compileExpr parses, type-checks and plans src in env; check, if set,
// may refuse the checked expression (see checkEstimate).
func compileExpr(env *cel.Env, src, written string, valueNames map[string]bool, check func(*cel.Env, *cel.Ast) error) (*program, error) {
	ast, iss := compileSource(env, src) // env.Compile, with parses reused (parse.go)
	if iss.Err() != nil {
		return nil, errorf(ErrExpression, "%s", issueMessages(iss))
	}
	if check != nil {
		if err := check(env, ast); err != nil {
			return nil, err
		}
	}
	pl, err := sharedPlanner()
	if err != nil {
		return nil, errorf(ErrExpression, "%v", err)
	}
	prog, err := pl.plan(env, ast)
	if err != nil {
		return nil, errorf(ErrExpression, "%v", err)
	}
	p := &program{written: written, prog: prog, out: ast.OutputType(), extensions: celExtensions(ast)}
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
	celast.PostOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.IdentKind {
			seen[e.AsIdent()] = true
		}
	}))
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
	ast, iss := parse(env, src)
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
