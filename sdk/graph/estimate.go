package graph

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiserver/pkg/cel/library"
)

// Compile prices every expression, as the API server prices a CRD's
// validation rules: cel-go's estimator walks the checked expression with
// the size of every value it reads. Sizes come from the instance schema's
// maxLength, maxItems and maxProperties; a size the schema leaves open is
// the largest an API server accepts in one request (maxRequestBytes), and
// a child's fields are always open.
//
// The estimate refuses nothing by default: kro has no such bound, and RGDs
// written for kro read lists their schema leaves unbounded, whose worst
// case estimates far above anything an instance actually runs. Evaluation
// is bounded at run time whatever the estimate (meter.go: actual cost,
// sizes and deadlines). An estimate above EstimatedCostWarning is reported
// in Graph.Warnings, naming the unbounded values it reads; a platform that
// wants such expressions refused at compile sets
// Limits.MaxExpressionEstimatedCost.

// EstimatedCostWarning is the estimated cost above which an expression is
// reported in Graph.Warnings: about what a quadratic function over one
// unbounded list, or a comprehension nested in another over two, estimates.
// Ordinary expressions over unbounded lists (a map over a list of
// children, joined) estimate below it.
const EstimatedCostWarning = 10_000_000_000_000

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

// costEstimate is what the estimator found for one expression.
type costEstimate struct {
	// max is the estimated cost of its most expensive path.
	max uint64
	// open names the values it reads whose size nothing bounds, each with
	// the marker it lacks: "schema.spec.xs (no maxItems)", or "the fields
	// of deployment (a resource's schema bounds none)".
	open []string
}

// estimate prices an expression, and refuses it when its estimate passes
// Limits.MaxExpressionEstimatedCost (when a platform set it).
func (cc costCheck) estimate(ast *cel.Ast) (costEstimate, error) {
	e := &sizeEstimator{spec: cc.spec, valueBytes: uint64(cc.limits.MaxValueBytes)}
	e.k8s = &library.CostEstimator{SizeEstimator: e}
	// The libraries' own estimates (env's cost options) are left out on
	// purpose: they price kro's functions and lists.range from an int
	// argument as unbounded, where the guards bound them at run time.
	est, err := checker.Cost(ast.NativeRep(), e)
	if err != nil {
		return costEstimate{}, nil // the estimator gave up: run time bounds it
	}
	out := costEstimate{max: est.Max, open: e.openValues()}
	if bound := cc.limits.MaxExpressionEstimatedCost; bound != 0 && est.Max > bound {
		return out, errorf(ErrLimit, "estimated cost %d passes %d (Limits.MaxExpressionEstimatedCost): %s",
			est.Max, bound, boundAdvice(out.open))
	}
	return out, nil
}

// warning is the Graph.Warnings message for an expression estimated above
// EstimatedCostWarning; "" below it.
func (ce costEstimate) warning() string {
	if ce.max <= EstimatedCostWarning {
		return ""
	}
	return fmt.Sprintf("estimated cost %.2g over %.0g (a worst case; each evaluation is bounded by Limits.ExpressionCost and ExpressionTimeout): %s",
		float64(ce.max), float64(EstimatedCostWarning), boundAdvice(ce.open))
}

// boundAdvice says which values to bound.
func boundAdvice(open []string) string {
	if len(open) == 0 {
		return "bound the lists and strings it reads with maxItems and maxLength"
	}
	return "it reads " + strings.Join(open, ", ")
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
	// open collects the values estimated at the largest request because
	// nothing bounds them (see openValues).
	open map[string]bool
}

// openValues returns what open collected, sorted.
func (e *sizeEstimator) openValues() []string {
	out := make([]string, 0, len(e.open))
	for v := range e.open {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func (e *sizeEstimator) noteOpen(v string) {
	if e.open == nil {
		e.open = map[string]bool{}
	}
	e.open[v] = true
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
		if len(path) > 0 && path[0] != varSchema {
			e.noteOpen("the fields of " + path[0] + " (a resource's schema bounds none)")
		}
		return &checker.SizeEstimate{Min: 0, Max: maxRequestBytes}
	}
	s := schemaAt(e.spec, path[1:])
	size := declaredSize(s)
	if size == maxRequestBytes && s != nil {
		e.noteOpen(strings.Join(visiblePath(path), ".") + " (" + boundMarker(el.Type()) + ")")
	}
	return &checker.SizeEstimate{Min: 0, Max: size}
}

// visiblePath is path as the RGD writes it: the estimator's @items and
// @values steps (into a list's items, a map's values) written as [*].
func visiblePath(path []string) []string {
	out := make([]string, 0, len(path))
	for _, p := range path {
		if p == "@items" || p == "@values" {
			if len(out) > 0 {
				out[len(out)-1] += "[*]"
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// boundMarker names the SimpleSchema marker that bounds a value of type t.
func boundMarker(t *types.Type) string {
	switch t.Kind() {
	case types.ListKind:
		return "no maxItems"
	case types.MapKind, types.StructKind:
		return "a map: no SimpleSchema marker bounds it"
	}
	return "no maxLength"
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
