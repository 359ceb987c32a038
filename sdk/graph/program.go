package graph

import (
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/interpreter"
)

// program is one compiled expression.
type program struct {
	// written is the expression as it appears in the RGD, ${} included.
	written string
	prog    interpreter.InterpretableV2
	out     *cel.Type
	// refs are the names this expression reads from Values ("schema" and
	// resource ids), sorted. Evaluation waits (ErrPending) until all are
	// present.
	refs []string
	// extensions names the fleetgraph extensions the expression uses.
	extensions []string
	// cluster says how the expression reads the cluster variable.
	cluster ClusterUse
	// formats are the format trees of the refs that hold formatted
	// strings, nil when none does.
	formats map[string]*formatTree
	// estimate is its compile-time cost estimate.
	estimate costEstimate
	// literalWarning names its malformed duration, timestamp or regex
	// literals; "" when it has none.
	literalWarning string
}

// compileExpr parses, type-checks, prices (see costCheck: an estimate
// over the limit a platform set refuses the expression) and plans src in
// env. withCluster says whether env declares the cluster variable.
func compileExpr(env *cel.Env, src, written string, valueNames map[string]bool, withCluster bool, cost costCheck) (*program, error) {
	ast, iss, literals := compileSource(env, src) // env.Compile, with parses reused (parse.go)
	if iss.Err() != nil {
		return nil, errorf(ErrExpression, "%s", issueMessages(iss))
	}
	var literalWarning string
	if literals.Err() != nil {
		literalWarning = issueMessages(literals) + ": it fails each time it is evaluated"
	}
	estimate, err := cost.estimate(ast)
	if err != nil {
		return nil, err
	}
	pl, err := sharedPlanner()
	if err != nil {
		return nil, errorf(ErrExpression, "%v", err)
	}
	prog, err := pl.plan(env, ast, literalWarning == "")
	if err != nil {
		return nil, errorf(ErrExpression, "%v", err)
	}
	p := &program{written: written, prog: prog, out: ast.OutputType(), extensions: celExtensions(ast), estimate: estimate, literalWarning: literalWarning}
	for _, id := range identifiers(ast) {
		if valueNames[id] {
			p.refs = append(p.refs, id)
		}
		if id == VarCluster && withCluster {
			p.cluster = clusterUses(ast)
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
	return sortedKeys(seen)
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

// planner turns checked expressions into interpretables sharing one
// function dispatcher. cel.Env.Program builds a fresh dispatcher holding
// every overload of every library for each program, which costs more than
// parsing and checking together; our extended environments only add
// variables and types, never functions, so one dispatcher serves them all.
type planner struct {
	disp  interpreter.Dispatcher
	guard interpreter.InterpretableDecoratorV2
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
// guard.go), and every comprehension step is charged to the evaluation's
// meter before it runs (see chargeLoops): one evaluation is bounded in
// cost, time and the size of what it builds. Constant regular expressions
// are compiled here, by the guard, once. Without optimize, constants are
// not folded: an expression with a malformed literal then fails when it
// is evaluated, as on kro, not here.
func (p *planner) plan(env *cel.Env, ast *cel.Ast, optimize bool) (interpreter.InterpretableV2, error) {
	attrs := interpreter.NewAttributeFactory(env.Container, env.CELTypeAdapter(), env.CELTypeProvider())
	interp := interpreter.NewInterpreter(p.disp, env.Container, env.CELTypeProvider(), env.CELTypeAdapter(), attrs)
	if unmetered {
		return interp.NewInterpretable(ast.NativeRep(),
			interpreter.CustomDecoratorV2(lazyOptionalOr),
			interpreter.Optimize(),
			interpreter.CompileRegexConstants(regexConstants...),
		)
	}
	opts := []interpreter.PlannerOption{interpreter.CustomDecoratorV2(lazyOptionalOr)}
	if optimize {
		opts = append(opts, interpreter.Optimize())
	}
	opts = append(opts, interpreter.CustomDecoratorV2(p.guard))
	if conds := loopConditions(ast.NativeRep().Expr()); len(conds) > 0 {
		opts = append(opts, interpreter.CustomDecoratorV2(chargeLoops(conds)))
	}
	return interp.NewInterpretable(ast.NativeRep(), opts...)
}

// unmetered plans and evaluates without guards, meter or sizer. Only the
// benchmark that measures what they cost sets it, before it compiles.
var unmetered bool

// exprCompiler compiles the expressions of one Compile call: each source
// once per environment, priced against the limits (estimate.go), with the
// fleetgraph extensions it uses recorded where it is used.
type exprCompiler struct {
	envs *celEnvs
	diag *diagnostics
	// valueNames are the names expressions read from Values: schema and
	// every resource id.
	valueNames map[string]bool
	cost       costCheck
	// fleet is set once an expression reads the fleet variable, and
	// fleetAt says where the first one is.
	fleet   bool
	fleetAt Error
	// cluster gathers how the expressions read the cluster variable.
	cluster ClusterUse
	// programs dedupes expressions: the same source in the same
	// environment compiles once.
	programs map[programKey]programResult
}

func newExprCompiler(envs *celEnvs, valueNames map[string]bool, cost costCheck, diag *diagnostics) *exprCompiler {
	return &exprCompiler{envs: envs, diag: diag, valueNames: valueNames, cost: cost, programs: map[programKey]programResult{}}
}

type programKey struct {
	env *cel.Env
	src string
}

type programResult struct {
	p   *program
	err error
}

// compile compiles src in env once per Compile call; written is how the
// expression appears at this use, in resource resID (empty for
// spec.schema) at path.
func (x *exprCompiler) compile(env *cel.Env, src, written, resID, path string) (*program, error) {
	key := programKey{env, src}
	res, ok := x.programs[key]
	if !ok {
		res.p, res.err = compileExpr(env, src, written, x.valueNames, x.envs.cluster, x.cost)
		x.programs[key] = res
	}
	if res.err != nil {
		return nil, res.err
	}
	for _, feature := range res.p.extensions {
		x.diag.extension(resID, path, feature)
	}
	if msg := res.p.estimate.warning(); msg != "" {
		x.diag.warn(Warning{ResourceID: resID, Path: path, Expression: written, Message: msg})
	}
	if msg := res.p.literalWarning; msg != "" {
		x.diag.warn(Warning{ResourceID: resID, Path: path, Expression: written, Message: msg})
	}
	if slices.Contains(res.p.refs, VarFleet) && x.valueNames[VarFleet] {
		x.diag.extension(resID, path, fleetFeature)
		if !x.fleet {
			x.fleetAt = Error{ResourceID: resID, Path: path, Expression: written}
		}
		x.fleet = true
	}
	if res.p.cluster != 0 {
		x.diag.extension(resID, path, clusterFeature)
		x.cluster |= res.p.cluster
	}
	p := *res.p
	p.written = written
	p.formats = formatsFor(p.refs, x.envs.formats)
	return &p, nil
}
