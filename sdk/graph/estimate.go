package graph

import (
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiserver/pkg/cel/library"
)

// Compile prices every expression before it accepts it, as the API server
// prices a CRD's validation rules: cel-go's estimator walks the checked
// expression with the size of every value it reads, and refuses the
// expression when its most expensive path passes
// Limits.MaxExpressionEstimatedCost. Sizes come from the instance schema's
// maxLength, maxItems and maxProperties; a size the schema leaves open is
// the largest an API server accepts in one request (maxRequestBytes), and
// a child's fields are always open. Evaluation is bounded at run time
// whatever the estimate (meter.go); the estimate refuses, at compile, what
// could never run within the limits on the largest instance.

// sizedKinds are the kinds of values whose size varies.
var sizedKinds = map[types.Kind]bool{
	types.StringKind: true, types.BytesKind: true, types.ListKind: true, types.MapKind: true,
	types.DynKind: true, types.AnyKind: true, types.StructKind: true,
}

// maxRequestBytes is the largest request body an API server accepts: no
// string or list an instance or a child holds is longer.
const maxRequestBytes = 3 << 20

// costCheck prices expressions against one compile's limits, with the
// sizes its instance schema declares.
type costCheck struct {
	// spec is the instance's spec schema (nil when it has none).
	spec   *apiextensionsv1.JSONSchemaProps
	limits Limits
}

// check refuses an expression whose estimated cost passes
// Limits.MaxExpressionEstimatedCost.
func (cc costCheck) check(env *cel.Env, ast *cel.Ast) error {
	e := &sizeEstimator{spec: cc.spec, valueBytes: uint64(cc.limits.MaxValueBytes)}
	e.k8s = &library.CostEstimator{SizeEstimator: e}
	// The libraries' own estimates (env's cost options) are left out on
	// purpose: they price kro's functions and lists.range from an int
	// argument as unbounded, where the guards bound them at run time.
	est, err := checker.Cost(ast.NativeRep(), e)
	if err != nil {
		return nil // the estimator gave up: run time bounds it
	}
	if est.Max > cc.limits.MaxExpressionEstimatedCost {
		return errorf(ErrLimit, "estimated cost %d passes %d (Limits.MaxExpressionEstimatedCost): bound the lists and strings it reads with maxItems and maxLength",
			est.Max, cc.limits.MaxExpressionEstimatedCost)
	}
	return nil
}

// sizeEstimator sizes the values an expression reads (from the instance
// schema), and prices kro's functions, which the Kubernetes estimator does
// not know.
type sizeEstimator struct {
	// spec is the instance's spec schema; nil when it has none.
	spec *apiextensionsv1.JSONSchemaProps
	// valueBytes is Limits.MaxValueBytes: what a priced function may
	// produce at the most.
	valueBytes uint64
	// k8s prices every other library's functions.
	k8s *library.CostEstimator
}

var _ checker.CostEstimator = &sizeEstimator{}

// EstimateSize implements checker.CostEstimator.
func (e *sizeEstimator) EstimateSize(el checker.AstNode) *checker.SizeEstimate {
	if t := el.Type(); t == nil || !sizedKinds[t.Kind()] {
		return nil // a scalar: its size is fixed
	}
	path := el.Path()
	if len(path) == 0 || path[0] != varSchema || e.spec == nil {
		// A value computed, or read from a child: no larger than the
		// largest request.
		return &checker.SizeEstimate{Min: 0, Max: maxRequestBytes}
	}
	s := schemaAt(e.spec, path[1:])
	return &checker.SizeEstimate{Min: 0, Max: declaredSize(s)}
}

// schemaAt follows path (after schema.) into the instance's spec schema;
// nil when it leaves what the schema declares.
func schemaAt(spec *apiextensionsv1.JSONSchemaProps, path []string) *apiextensionsv1.JSONSchemaProps {
	if len(path) == 0 || path[0] != "spec" {
		return nil
	}
	s := spec
	for _, p := range path[1:] {
		switch {
		case p == "@items" && s.Items != nil && s.Items.Schema != nil:
			s = s.Items.Schema
		case p == "@values" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			s = s.AdditionalProperties.Schema
		case s.Properties != nil:
			next, ok := s.Properties[p]
			if !ok {
				return nil
			}
			s = &next
		default:
			return nil
		}
	}
	return s
}

// declaredSize is the most characters, items or properties s allows.
func declaredSize(s *apiextensionsv1.JSONSchemaProps) uint64 {
	if s == nil {
		return maxRequestBytes
	}
	for _, bound := range []*int64{s.MaxLength, s.MaxItems, s.MaxProperties} {
		if bound != nil && *bound >= 0 {
			return uint64(*bound)
		}
	}
	return maxRequestBytes
}

// EstimateCallCost implements checker.CostEstimator for kro's functions:
// the estimate of what callcost.go charges at run time.
func (e *sizeEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	size := func(i int) checker.SizeEstimate {
		if i < len(args) {
			if s := args[i].ComputedSize(); s != nil {
				return *s
			}
			if s := e.EstimateSize(args[i]); s != nil {
				return *s
			}
		}
		return checker.SizeEstimate{Min: 0, Max: maxRequestBytes}
	}
	valueBytes := e.valueBytes
	out := &checker.SizeEstimate{Min: 0, Max: valueBytes}
	switch overloadID {
	case "random.seededString_int_string", "lists_range":
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: valueBytes}, ResultSize: out}
	case "json.marshal_dyn", "json_encode_dyn", "json.unmarshal_string", "hash.fnv64a_string", "hash.sha256_string", "hash.md5_string",
		"random.seededInt_int_int_string":
		s := size(0)
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: s.Max + 1}, ResultSize: out}
	case "map_merge", "dyn_deepmerge_dyn":
		a, b := size(0), size(1)
		n := satAdd(a.Max, b.Max)
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: n}, ResultSize: &checker.SizeEstimate{Min: 0, Max: n}}
	case "lists.setAtIndex_list_int_T", "lists.insertAtIndex_list_int_T", "lists.removeAtIndex_list_int":
		s := size(0)
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: s.Max + 1}, ResultSize: &checker.SizeEstimate{Min: 0, Max: s.Max + 1}}
	}
	return e.k8s.EstimateCallCost(function, overloadID, target, args)
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
