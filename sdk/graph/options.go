package graph

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Limits on forEach, enforced by Compile (iterators) and Node.Iterations
// (combinations).
const (
	// MaxIterators is the most forEach entries one resource may have.
	MaxIterators = 10
	// MaxIterations is the most objects one forEach resource may expand to.
	MaxIterations = 1000
)

// Options tune Compile. The zero value is valid.
type Options struct {
	// Resolver supplies the OpenAPI schema of each child kind so that
	// expressions reading child fields are type-checked and template fields
	// are checked against the kind's schema.
	//
	// Defaults to nil: child kinds are typed dynamically, so expressions that
	// read child fields type-check as dyn and only fail at evaluation. The
	// instance (schema.*) is always fully typed from the SimpleSchema.
	Resolver SchemaResolver

	// DynamicUnknownKinds types a child kind as dyn when Resolver reports it
	// unknown (an error wrapping ErrSchemaNotFound), instead of failing.
	// Useful when the compiling cluster lacks CRDs the target clusters have.
	//
	// Defaults to false: an unknown kind is a compile error.
	DynamicUnknownKinds bool

	// Strict compiles as kro v0.9.4 does: every fleetgraph extension (see
	// Graph.Extensions) is an error instead of being allowed and listed.
	//
	// Defaults to false: extensions are allowed, and listed in
	// Graph.Extensions.
	Strict bool

	// RefuseSameObjects refuses two resources that render the same object
	// (same kind, namespace and name, written alike) whenever one of them
	// is created, that is unless each has an includeWhen entry the other
	// lacks. Both would be applied, and the one applied last would
	// overwrite what the other wrote.
	//
	// Defaults to false: as kro does, such graphs are accepted, and each
	// pair is reported in Graph.Warnings.
	RefuseSameObjects bool

	// AllErrors makes a Compile that finds the structure wrong (the
	// schema, resource ids, templates, forEach, targets) go on to compile
	// the expressions of every resource no such error names, typing the
	// others (and a schema that failed) as dyn, so that one call reports
	// the problems of both phases: what a tool that shows every problem
	// at once wants. It never changes whether Compile succeeds.
	//
	// Defaults to false: Compile returns after the first phase that
	// found an error, which is all a hub needs to refuse the RGD.
	AllErrors bool

	// Limits bound what the RGD may make the compiler build and what its
	// expressions may cost when they run; the compiled Graph keeps them
	// (Graph.Limits) for the runtime that evaluates it.
	//
	// Defaults to Limits{}.WithDefaults(): every field at its documented
	// default.
	Limits Limits
}

// withDefaults returns o with its defaults filled in.
func (o Options) withDefaults() Options {
	o.Limits = o.Limits.WithDefaults()
	return o
}

// SchemaResolver looks up the OpenAPI v3 schema of a kind. Its method set
// matches k8s.io/apiserver/pkg/cel/openapi/resolver.SchemaResolver, so the
// API server's resolvers can be used directly.
type SchemaResolver interface {
	// ResolveSchema returns the schema of gvk's objects with every $ref
	// resolved. When the kind is unknown it returns an error wrapping
	// ErrSchemaNotFound (or the API server resolver's own
	// ErrSchemaNotFound). The returned schema must not be modified by the
	// caller or the resolver afterwards. It must be safe for concurrent
	// use.
	ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error)
}

// StaticResolver is a SchemaResolver backed by a fixed map, for tests and
// for programs that embed the schemas they use.
type StaticResolver map[schema.GroupVersionKind]*spec.Schema

var _ SchemaResolver = StaticResolver{}

// ResolveSchema implements SchemaResolver.
func (r StaticResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if s, ok := r[gvk]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrSchemaNotFound, gvk)
}
