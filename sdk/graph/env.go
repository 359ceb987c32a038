package graph

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Variable names with a meaning of their own in expressions.
const (
	varSchema = "schema" // the instance
	varEach   = "each"   // one item of a collection, in readyWhen
)

// kroLibraries are the CEL libraries kro v0.9.4 offers in every
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

// withConditionTypes declares the object types of runtimeLib, and the
// cluster variable's (cluster.go).
func withConditionTypes(env *cel.Env, err error) (*cel.Env, error) {
	if err != nil {
		return nil, err
	}
	te, err := extendTypes(env, []*apiservercel.DeclType{conditionDecl, runtimeDecl, clusterDecl, fleetDecl})
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
	names := sortedKeys(vars)
	opts := make([]cel.EnvOption, 0, len(names))
	for _, n := range names {
		opts = append(opts, cel.Variable(n, vars[n]))
	}
	return opts
}

// celEnvs are the environments of one compile's expressions.
type celEnvs struct {
	kinds    *typedEnv // base + the child kinds' types (cached across compiles)
	instance *typedEnv // kinds + the instance's types + schema + every resource id
	graph    *cel.Env  // instance.env
	// cluster is set when the graph's environment declares the cluster
	// variable (see clusterDeclared).
	cluster bool
	// formats are the format trees of schema and each resource id (for a
	// collection, of one item).
	formats map[string]*formatTree
}

// buildEnvs declares the object types and the variables every expression
// may use: schema, of type instance, each resource's id, and cluster
// unless a resource or iterator takes the name.
func buildEnvs(instance *apiservercel.DeclType, resources []*resource, strict bool) (*celEnvs, error) {
	e := &celEnvs{cluster: clusterDeclared(resources)}
	var kinds []*apiservercel.DeclType
	seen := map[*apiservercel.DeclType]bool{}
	vars := map[string]*cel.Type{varSchema: instance.CelType()}
	e.formats = map[string]*formatTree{varSchema: formatsOf(instance)}
	for _, r := range resources {
		e.formats[r.node.ID] = formatsOf(r.decl)
		if r.decl.IsObject() && !seen[r.decl] {
			seen[r.decl] = true
			kinds = append(kinds, r.decl)
		}
		t := celType(r.decl)
		if r.node.Collection {
			t = cel.ListType(t)
		}
		vars[r.node.ID] = t
	}
	if e.cluster {
		vars[VarCluster] = clusterDecl.CelType()
	}
	if fleetDeclared(resources) {
		vars[VarFleet] = fleetDecl.CelType() // fleet.go
	}
	var err error
	if e.kinds, err = kindsEnv(kinds, strict); err != nil {
		return nil, &Error{Err: errorf(ErrExpression, "declaring the child kinds' types: %v", err)}
	}
	if e.instance, err = extendTypes(e.kinds.env, []*apiservercel.DeclType{instance}, variables(vars)...); err != nil {
		return nil, &Error{Err: errorf(ErrExpression, "declaring the instance type and variables: %v", err)}
	}
	e.graph = e.instance.env
	return e, nil
}

// findDeclType finds an object type by name among the instance's and the
// child kinds'.
func (e *celEnvs) findDeclType(name string) (*apiservercel.DeclType, bool) {
	if t, ok := e.instance.findDeclType(name); ok && t.IsObject() {
		return t, true
	}
	return e.kinds.findDeclType(name)
}
