package sdk

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

// compileOptions are the options every graph of this Hub is compiled with.
// The resolver is read under h.mu: SetupWithManager sets the default one.
func (h *Hub) compileOptions() graph.Options {
	h.mu.Lock()
	r := h.resolver
	h.mu.Unlock()
	return graph.Options{
		Resolver: r,
		// The hub need not serve the CRDs its spokes have: a kind it does
		// not know is typed dynamically rather than refused.
		DynamicUnknownKinds: r != nil,
		Strict:              h.opts.Strict,
		Limits:              h.opts.Limits,
	}
}

// compile compiles rgd through h.compiles. Go's RegisterGraph waits for
// its compile; the RGD controller waits rgdCompileWait, then goes on with
// other RGDs and is told when the compile ends.
func (h *Hub) compile(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, src source) (*graph.Graph, error) {
	wait := h.opts.CompileTimeout + time.Second
	if src == fromRGD {
		wait = rgdCompileWait
	}
	return h.compiles.get(ctx, rgd, h.compileOptions(), wait)
}

// setupResolver picks the schema resolver: the embedder's, or by default
// one reading the hub cluster's OpenAPI, as kro reads its cluster's.
func (h *Hub) setupResolver(cfg *rest.Config) error {
	r := h.opts.SchemaResolver
	if r == nil && !h.opts.DisableSchemaResolver {
		def, err := resolver.NewForConfig(cfg, resolver.Options{})
		if err != nil {
			return fmt.Errorf("schema resolver for the hub cluster: %w", err)
		}
		r = def
	}
	h.mu.Lock()
	h.resolver = r
	h.mu.Unlock()
	return nil
}
