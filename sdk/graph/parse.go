package graph

import (
	"strings"
	"sync"
	"weak"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/overloads"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// parses keeps the parse of recent expressions, process-wide. The same
// text comes back in graph after graph (schema.spec.name), in every
// revision of one and in every spoke's schema check, and CEL's parser (an
// ANTLR grammar) costs more than its type-checker. A parse is kept in its
// protobuf form, which nothing modifies, and turned into a fresh AST at
// each use: the checker rewrites the AST it checks.
//
// Entries are keyed by the parser's macros (the only parser setting in
// which this package's environments differ: see env.go) and the text.
// Long texts are not kept, and the cache is emptied when full, so a tenant
// writing many expressions costs others only parses.
var parses = &parsesCache{m: map[parseKey]*parsedExpr{}, seen: map[parseKey]bool{}, macros: map[weak.Pointer[cel.Env]]string{}}

type parsesCache struct {
	sync.Mutex
	m map[parseKey]*parsedExpr
	// seen holds the texts parsed once, not kept yet.
	seen map[parseKey]bool
	// macros is each environment's macro fingerprint (see macroKey),
	// held weakly: environments are made per compile.
	macros map[weak.Pointer[cel.Env]]string
}

const (
	parsesSize      = 4096
	parsesMaxSource = 2048
	parsesEnvsSize  = 256
)

type parseKey struct {
	macros, src string
}

type parsedExpr struct {
	pb     *exprpb.ParsedExpr
	source common.Source
}

// compileSource parses (or reuses the parse of) src and type-checks it in
// env: what env.Compile does, and the literal validators.
// The issues of a malformed duration, timestamp or regex literal come
// apart (literals): kro v0.9.4 accepts such an expression, which fails
// each time it is evaluated, so it is a warning, not a refusal.
func compileSource(env *cel.Env, src string) (checked *cel.Ast, iss, literals *cel.Issues) {
	ast, iss := parse(env, src)
	if iss.Err() != nil {
		return nil, iss, nil
	}
	checked, iss = env.Check(ast)
	if iss.Err() != nil {
		return nil, iss, nil
	}
	return checked, iss, validateLiterals(env, checked)
}

// literalValidators find a malformed duration, timestamp or regex literal
// when the RGD is compiled, where kro fails on it at every evaluation that
// reaches it.
var literalValidators = []cel.ASTValidator{
	cel.ValidateDurationLiterals(),
	cel.ValidateTimestampLiterals(),
	cel.ValidateRegexLiterals(),
}

// validatedFunctions are the functions whose literal argument
// literalValidators check.
var validatedFunctions = map[string]bool{overloads.TypeConvertDuration: true, overloads.TypeConvertTimestamp: true, overloads.Matches: true}

// validateLiterals runs literalValidators on a checked expression that
// calls one of validatedFunctions with a literal. Run by the environment,
// each would walk every expression through an allocating view of it, which
// cost a twelfth of a compile; one plain walk finds the few that need
// them.
func validateLiterals(env *cel.Env, checked *cel.Ast) *cel.Issues {
	native := checked.NativeRep()
	found := false
	celast.PreOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if found || e.Kind() != celast.CallKind {
			return
		}
		call := e.AsCall()
		found = validatedFunctions[call.FunctionName()] && len(call.Args()) > 0 && call.Args()[0].Kind() == celast.LiteralKind
	}))
	if !found {
		return nil
	}
	iss := cel.NewIssuesWithSourceInfo(common.NewErrors(checked.Source()), native.SourceInfo())
	for _, v := range literalValidators {
		v.Validate(env, nil, native, iss)
	}
	return iss
}

// seenBefore reports whether key was parsed before, and remembers that it
// has been now.
func (p *parsesCache) seenBefore(key parseKey) bool {
	p.Lock()
	defer p.Unlock()
	if p.seen[key] {
		delete(p.seen, key)
		return true
	}
	if len(p.seen) >= parsesSize {
		clear(p.seen)
	}
	p.seen[key] = true
	return false
}

// parse is env.Parse(src): built directly for a bare field path (see
// parsePath), else from the cache when it can be.
func parse(env *cel.Env, src string) (*cel.Ast, *cel.Issues) {
	if ast, ok := parsePath(src); ok {
		return ast, nil
	}
	if len(src) > parsesMaxSource {
		return env.Parse(src)
	}
	key := parseKey{macros: macroKey(env), src: src}
	parses.Lock()
	p := parses.m[key]
	parses.Unlock()
	if p != nil {
		return cel.ParsedExprToAstWithSource(p.pb, p.source), nil
	}
	ast, iss := env.Parse(src)
	if iss.Err() != nil || !parses.seenBefore(key) {
		// Kept from its second parse on: a text seen once (most of a new
		// graph's) costs no conversion.
		return ast, iss
	}
	pb, err := cel.AstToParsedExpr(ast)
	if err != nil {
		return ast, iss
	}
	parses.Lock()
	if len(parses.m) >= parsesSize {
		clear(parses.m)
	}
	parses.m[key] = &parsedExpr{pb: pb, source: ast.Source()}
	parses.Unlock()
	return ast, iss
}

// macroKey names the macros env's parser expands, once per environment.
func macroKey(env *cel.Env) string {
	wp := weak.Make(env)
	parses.Lock()
	k, ok := parses.macros[wp]
	parses.Unlock()
	if ok {
		return k
	}
	macros := env.Macros()
	keys := make([]string, len(macros))
	for i, m := range macros {
		keys[i] = m.MacroKey()
	}
	k = strings.Join(keys, ",")
	parses.Lock()
	if len(parses.macros) >= parsesEnvsSize {
		clear(parses.macros)
	}
	parses.macros[wp] = k
	parses.Unlock()
	return k
}
