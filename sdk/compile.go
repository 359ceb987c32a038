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
// The resolver is read under mu: SetupWithManager sets the default one.
func (r *registry) compileOptions() graph.Options {
	r.mu.Lock()
	res := r.resolver
	r.mu.Unlock()
	opts := r.compileWith
	opts.Resolver = res
	// The hub need not serve the CRDs its spokes have: a kind it does not
	// know is typed dynamically rather than refused.
	opts.DynamicUnknownKinds = res != nil
	return opts
}

// compile compiles rgd through r.compiles. Go's RegisterGraph waits for
// its compile, schema lookups included (or for its context); the RGD
// controller waits rgdCompileWait, then goes on with other RGDs and is
// told when the compile ends.
func (r *registrar) compile(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, src source) (*graph.Graph, error) {
	wait := r.compiles.schemaWait + r.h.opts.Compile.Timeout + time.Second
	if src == fromRGD {
		wait = rgdCompileWait
	}
	return r.compiles.get(ctx, rgd, r.h.compileOptions(), wait)
}

// setupResolver picks the schema resolver: the embedder's, or by default
// one reading the hub cluster's OpenAPI, as kro reads its cluster's.
func (r *registry) setupResolver(opts Options, cfg *rest.Config) error {
	res := opts.Compile.SchemaResolver
	if res == nil && !opts.Compile.DisableSchemaResolver {
		def, err := resolver.NewForConfig(cfg, resolver.Options{})
		if err != nil {
			return fmt.Errorf("schema resolver for the hub cluster: %w", err)
		}
		res = def
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolver = res
	return nil
}
