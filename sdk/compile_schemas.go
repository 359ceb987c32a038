package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	celresolver "k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// A compile asks the schema resolver for every child kind, and the
// resolver asks the hub's API server. Options.Compile.Timeout bounds the
// compile's own work, which the spec decides, and a compile past it is
// the spec's fault (remembered, the RGD refused): a lookup that waits for
// a slow API server must not count against it. So the schemas a spec
// needs are looked up first, within schemaWait, and only then does the
// compile's clock start; the compile then finds them cached. Should a
// lookup inside the compile still wait (the warm-up could not ask, or a
// document expired meanwhile), it waits no longer than the compile's own
// context, and its failure says the schema was unavailable, which is not
// remembered.

// schemaWait bounds the lookups of a spec's child kinds before its
// compile: a hub API server that answers OpenAPI requests within it, however
// slowly, never fails a compile.
const schemaWait = 2 * time.Minute

// maxWarmKinds bounds how many kinds one spec's warm-up asks for; a spec
// with more has the rest asked by the compile itself.
const maxWarmKinds = 256

// contextResolver is a schema resolver whose lookups take a context, as
// the default one (graph/resolver.Resolver) does.
type contextResolver interface {
	ResolveSchemaContext(ctx context.Context, gvk schema.GroupVersionKind) (*spec.Schema, error)
}

// warmSchemas asks r for the schema of every kind rgd's resources name,
// within ctx. It returns an error wrapping graph.ErrSchemaUnavailable
// when a lookup failed other than by the kind being unknown (a kind the
// server does not serve is the compile's to judge). A resolver without
// contexts is not asked: its lookups happen in the compile, as before.
func warmSchemas(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, r graph.SchemaResolver) error {
	cr, ok := r.(contextResolver)
	if !ok {
		return nil
	}
	for _, gvk := range specKinds(rgd) {
		_, err := cr.ResolveSchemaContext(ctx, gvk)
		if err != nil && !errors.Is(err, graph.ErrSchemaNotFound) && !errors.Is(err, celresolver.ErrSchemaNotFound) {
			return &graph.Error{Path: "spec.resources", Err: fmt.Errorf("%w: looking up the schema of %s before compiling: %w", graph.ErrSchemaUnavailable, gvk, err)}
		}
	}
	return nil
}

// specKinds are the kinds rgd's templates and external references name
// as plain strings, at most maxWarmKinds, without repeats. What does not
// decode is left to the compile to report.
func specKinds(rgd *v1alpha1.ResourceGraphDefinition) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	add := func(apiVersion, kind string) {
		gv, err := schema.ParseGroupVersion(apiVersion)
		gvk := gv.WithKind(kind)
		if err != nil || kind == "" || seen[gvk] || len(out) >= maxWarmKinds {
			return
		}
		seen[gvk] = true
		out = append(out, gvk)
	}
	for _, r := range rgd.Spec.Resources {
		if r.ExternalRef != nil {
			add(r.ExternalRef.APIVersion, r.ExternalRef.Kind)
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if json.Unmarshal(r.Template.Raw, &head) == nil {
			add(head.APIVersion, head.Kind)
		}
	}
	return out
}

// boundResolver asks a contextResolver within one context: a compile's
// lookups end with the compile.
type boundResolver struct {
	r   contextResolver
	ctx context.Context
}

func (b boundResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	return b.r.ResolveSchemaContext(b.ctx, gvk)
}

// boundScopeResolver is a boundResolver that also tells scopes.
type boundScopeResolver struct {
	boundResolver
	scopes interface {
		IsNamespacedContext(ctx context.Context, gvk schema.GroupVersionKind) (bool, error)
	}
}

func (b boundScopeResolver) IsNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	return b.scopes.IsNamespacedContext(b.ctx, gvk)
}

var (
	_ graph.SchemaResolver = boundResolver{}
	_ graph.ScopeResolver  = boundScopeResolver{}
)

// bindResolver returns r bounded by ctx when its lookups take a context,
// else r itself.
func bindResolver(ctx context.Context, r graph.SchemaResolver) graph.SchemaResolver {
	cr, ok := r.(contextResolver)
	if !ok {
		return r
	}
	b := boundResolver{r: cr, ctx: ctx}
	if sr, ok := r.(interface {
		IsNamespacedContext(ctx context.Context, gvk schema.GroupVersionKind) (bool, error)
	}); ok {
		return boundScopeResolver{boundResolver: b, scopes: sr}
	}
	if _, scoped := r.(graph.ScopeResolver); scoped {
		return r // tells scopes without a context: keep both as they are
	}
	return b
}
