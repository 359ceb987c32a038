package graph

import (
	"context"
	"errors"

	apiservercel "k8s.io/apiserver/pkg/cel"
	celresolver "k8s.io/apiserver/pkg/cel/openapi/resolver"
)

// resolveKinds looks up each child kind's schema and CEL type. Without a
// resolver, or once ctx is done (Compile then stops), every kind is typed
// dyn; a kind the resolver does not know is too under
// Options.DynamicUnknownKinds, and an error otherwise.
func resolveKinds(ctx context.Context, opts Options, resources []*resource, diag *diagnostics) {
	for _, r := range resources {
		r.decl = apiservercel.DynType
		if opts.Resolver == nil || ctx.Err() != nil {
			continue
		}
		s, err := opts.Resolver.ResolveSchema(r.node.GVK)
		switch {
		case err == nil && s != nil:
			r.schema = s
			gvk := r.node.GVK
			r.decl = cachedDeclType(s, gvkTypeName(gvk.Group, gvk.Version, gvk.Kind))
		case isNotFound(err) && opts.DynamicUnknownKinds:
		case isNotFound(err):
			diag.fail(&Error{ResourceID: r.node.ID, Path: kindPath(r), Err: errorf(ErrSchemaNotFound, "no schema for %s: %v", r.node.GVK, err)})
		default:
			diag.fail(&Error{ResourceID: r.node.ID, Path: kindPath(r), Err: errorf(ErrSchemaUnavailable, "resolving the schema of %s: %w", r.node.GVK, err)})
		}
	}
}

// kindPath is where r names its kind.
func kindPath(r *resource) string {
	if r.node.External {
		return "externalRef.kind"
	}
	return "kind"
}

func isNotFound(err error) bool {
	return errors.Is(err, ErrSchemaNotFound) || errors.Is(err, celresolver.ErrSchemaNotFound)
}

// valueNames are the names expressions read from Values: schema and every
// resource id.
func valueNames(resources []*resource) map[string]bool {
	out := make(map[string]bool, len(resources)+1)
	out[varSchema] = true
	for _, r := range resources {
		out[r.node.ID] = true
	}
	if fleetDeclared(resources) {
		out[VarFleet] = true // fleet.go: read from Values, pending while absent
	}
	return out
}
