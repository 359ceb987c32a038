package schemas

import (
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	celresolver "k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

// Resolver knows kinds' schemas and scopes, as graph.Compile asks them.
type Resolver interface {
	graph.SchemaResolver
	graph.ScopeResolver
}

var _ Resolver = &resolver.Resolver{}

// Offline returns a resolver of the kinds built into Kubernetes and, when
// crds are given, of those CRDs' kinds too.
func Offline(crds Docs) (Resolver, error) {
	docs, err := Builtin()
	if err != nil {
		return nil, err
	}
	if len(crds) > 0 {
		if docs, err = docs.Merge(crds); err != nil {
			return nil, err
		}
	}
	return resolver.New(docs, resolver.Options{}), nil
}

// Chain asks each resolver in turn until one knows the kind.
type Chain []Resolver

var _ Resolver = Chain{}

// ResolveSchema implements graph.SchemaResolver.
func (c Chain) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	err := error(graph.ErrSchemaNotFound)
	for _, r := range c {
		var s *spec.Schema
		if s, err = r.ResolveSchema(gvk); !NotFound(err) {
			return s, err
		}
	}
	return nil, err
}

// IsNamespaced implements graph.ScopeResolver.
func (c Chain) IsNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	err := error(graph.ErrSchemaNotFound)
	for _, r := range c {
		var ns bool
		if ns, err = r.IsNamespaced(gvk); !NotFound(err) {
			return ns, err
		}
	}
	return false, err
}

// NotFound reports whether err says a kind is unknown.
func NotFound(err error) bool {
	return errors.Is(err, graph.ErrSchemaNotFound) || errors.Is(err, celresolver.ErrSchemaNotFound)
}

// Recorder remembers the kinds its resolver did not know.
type Recorder struct {
	Resolver
	mu      sync.Mutex
	unknown map[schema.GroupVersionKind]bool
}

var _ Resolver = &Recorder{}

// ResolveSchema implements graph.SchemaResolver.
func (r *Recorder) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	s, err := r.Resolver.ResolveSchema(gvk)
	if NotFound(err) {
		r.mu.Lock()
		if r.unknown == nil {
			r.unknown = map[schema.GroupVersionKind]bool{}
		}
		r.unknown[gvk] = true
		r.mu.Unlock()
	}
	return s, err
}

// Unknown reports whether gvk was asked for and not known.
func (r *Recorder) Unknown(gvk schema.GroupVersionKind) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unknown[gvk]
}
