package graph

import (
	"errors"
	"time"
)

// ErrLimit is wrapped by every error that a Limits bound causes: a schema
// that expands too far, a generated CRD too large to store, an expression
// too expensive or too slow, an instance that renders too much. The *Error
// around it names the resource, field path and expression (truncated), and
// its message names the limit and its value. Match it with errors.Is.
var ErrLimit = errors.New("limit exceeded")

// Limits bound what one tenant's ResourceGraphDefinition or instance may
// cost the process that compiles and serves it. A platform runs one hub for
// many tenants, and some may be hostile: nothing they write may allocate or
// run without a bound, and one tenant's excess delays only that tenant.
//
// Every field has a default, filled in by WithDefaults and documented on
// the field; a zero field means "the default", never "unlimited" (except
// MaxExpressionEstimatedCost, a refusal a platform opts into). The
// defaults are generous: no RGD from kro's examples or fleetgraph's corpus
// comes near them. Kubernetes' own CEL limits for CRD validation rules and
// admission policies are the reference for what is bounded (kro v0.9.4 has
// no CEL cost limit at all).
//
// Limits is a plain value: copy it freely. The same Limits serve the
// compiler (Options.Limits), which bounds the schema and the CRD and keeps
// the evaluation limits in the compiled Graph, and the spoke runtime, which
// enforces the per-instance bounds.
type Limits struct {
	// --- Compile: what an RGD may make the compiler build. ---

	// MaxSchemaProperties is the most properties (object fields, at every
	// depth, custom types counted once per use) that an RGD's instance
	// schema may expand to. Custom types are expanded by copy, so a type
	// made of two copies of the previous one doubles at each level; the
	// bound is checked while expanding, before the copy is made.
	//
	// Defaults to 10,000.
	MaxSchemaProperties int

	// MaxCRDBytes is the largest generated CustomResourceDefinition, in
	// bytes of JSON, that Compile accepts. etcd stores at most 1.5 MiB per
	// object, and an API server refuses a request body over 3 MiB; a CRD
	// over this bound would be refused by every spoke at fan-out instead.
	//
	// Defaults to 1 MiB.
	MaxCRDBytes int

	// MaxExpressionEstimatedCost, when set, refuses at compile an
	// expression whose compile-time cost estimate passes it, in the CEL
	// cost units Kubernetes uses, with the instance schema's maxLength and
	// maxItems as size bounds. Sizes a schema leaves open (and every value
	// read from a child) are estimated the way the API server estimates
	// them, from the largest request it accepts (3 MiB), so expressions
	// that kro serves over lists without maxItems estimate as high as 1e19.
	// A platform that wants its tenants to bound such lists sets it (1e13
	// refuses a quadratic function over an unbounded list, and passes kro's
	// examples). Whatever the estimate, every evaluation is bounded at run
	// time by the fields below, and estimates above EstimatedCostWarning
	// are reported in Graph.Warnings.
	//
	// Defaults to 0: no expression is refused for its estimate, as kro
	// refuses none. It is the one field whose zero is no bound.
	MaxExpressionEstimatedCost uint64

	// --- Evaluation: what one expression may do at run time. ---

	// ExpressionCost is the most CEL cost units one evaluation of one
	// expression may spend, counted with size-aware costs (a function's
	// cost grows with its inputs). Kubernetes' per-call limit for CRD
	// validation rules is the reference.
	//
	// Defaults to 1e6 (Kubernetes' PerCallLimit).
	ExpressionCost uint64

	// ExpressionTimeout is the wall-clock deadline of one evaluation of one
	// expression. A comprehension is interrupted when it passes; functions
	// whose cost grows with their inputs are refused before they run when
	// their inputs are too large to finish in time.
	//
	// Defaults to 100ms.
	ExpressionTimeout time.Duration

	// MaxValueBytes is the largest string, bytes or list (in elements) that
	// one function call may produce: random strings, lists.range,
	// replace, join, format, json.marshal, merges and the like check it
	// before they allocate.
	//
	// Defaults to 1 MiB (and 1 Mi elements for lists).
	MaxValueBytes int

	// --- Per instance: what one reconcile of one instance may do. ---

	// InstanceCost is the most CEL cost units all evaluations of one
	// reconcile of one instance may spend together, forEach items, status
	// projections and readyWhen included.
	//
	// Defaults to 1e8 (a hundred expressions at the per-expression limit).
	InstanceCost uint64

	// InstanceTimeout is the time all evaluations of one reconcile of one
	// instance may spend together: the time spent evaluating, not the time
	// between evaluations (API calls are bounded separately, by the
	// runtime's call timeout). An evaluation is timed once it has spent a
	// few hundred cost units; cheaper ones are bounded by InstanceCost.
	//
	// Defaults to 2s.
	InstanceTimeout time.Duration

	// MaxChildren is the most children one instance may have across all of
	// its resources, forEach items included. (Each forEach resource is also
	// bounded by MaxIterations.) The spoke runtime counts the children of
	// every resource of one level of the graph before it applies any of
	// them: a level that passes the limit writes nothing.
	//
	// Defaults to 5,000.
	MaxChildren int

	// MaxRenderedBytes is the most bytes (as JSON) that one reconcile of
	// one instance may render for its children together.
	//
	// Defaults to 64 MiB.
	MaxRenderedBytes int

	// MaxStatusBytes is the largest status (as JSON) that one instance's
	// projections may produce; a larger one is not written and the
	// instance goes to ERROR.
	//
	// Defaults to 1 MiB.
	MaxStatusBytes int

	// --- Reporting. ---

	// MaxMessageExpression is the most characters of an expression or a
	// value quoted in an error, condition, event or log line; longer ones
	// are cut and marked with "…".
	//
	// Defaults to 200.
	MaxMessageExpression int
}

// Default values of Limits; see the field of the same name.
const (
	DefaultMaxSchemaProperties  = 10_000
	DefaultMaxCRDBytes          = 1 << 20
	DefaultExpressionCost       = 1_000_000
	DefaultExpressionTimeout    = 100 * time.Millisecond
	DefaultMaxValueBytes        = 1 << 20
	DefaultInstanceCost         = 100_000_000
	DefaultInstanceTimeout      = 2 * time.Second
	DefaultMaxChildren          = 5_000
	DefaultMaxRenderedBytes     = 64 << 20
	DefaultMaxStatusBytes       = 1 << 20
	DefaultMaxMessageExpression = 200
)

// WithDefaults returns l with every zero (or negative) field set to its
// default.
func (l Limits) WithDefaults() Limits {
	setInt(&l.MaxSchemaProperties, DefaultMaxSchemaProperties)
	setInt(&l.MaxCRDBytes, DefaultMaxCRDBytes)
	setUint(&l.ExpressionCost, DefaultExpressionCost)
	setDuration(&l.ExpressionTimeout, DefaultExpressionTimeout)
	setInt(&l.MaxValueBytes, DefaultMaxValueBytes)
	setUint(&l.InstanceCost, DefaultInstanceCost)
	setDuration(&l.InstanceTimeout, DefaultInstanceTimeout)
	setInt(&l.MaxChildren, DefaultMaxChildren)
	setInt(&l.MaxRenderedBytes, DefaultMaxRenderedBytes)
	setInt(&l.MaxStatusBytes, DefaultMaxStatusBytes)
	setInt(&l.MaxMessageExpression, DefaultMaxMessageExpression)
	return l
}

func setInt(f *int, def int) {
	if *f <= 0 {
		*f = def
	}
}

func setUint(f *uint64, def uint64) {
	if *f == 0 {
		*f = def
	}
}

func setDuration(f *time.Duration, def time.Duration) {
	if *f <= 0 {
		*f = def
	}
}
