package graph

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
	"github.com/google/cel-go/cel"
)

// ScopeResolver is an optional interface of a SchemaResolver: one that also
// knows whether a kind is namespaced lets Compile make kro's scope checks
// (see identityChecker.checkScope).
type ScopeResolver interface {
	// IsNamespaced reports whether gvk's objects live in a namespace. An
	// unknown kind gives an error wrapping ErrSchemaNotFound. It must be
	// safe for concurrent use.
	IsNamespaced(gvk schema.GroupVersionKind) (bool, error)
}

// identityChecker makes the checks on the objects' names that need no
// expression compiled: label-sized names, kro's scope rules, every forEach
// iterator in the name (identity.go), and no two resources rendering the
// same object (samename.go).
type identityChecker struct {
	// name is the RGD's.
	name string
	// rgd gives each resource its target (targetOf): a target is part of
	// an object's identity.
	rgd       *v1alpha1.ResourceGraphDefinition
	resources []*resource
	// scopes knows which kinds are namespaced; nil when the resolver does
	// not (no scope check then).
	scopes ScopeResolver
	// namespaced is whether the instance is.
	namespaced bool
	// env parses the names' expressions.
	env  *cel.Env
	diag *diagnostics
	// refuseSameObjects is Options.RefuseSameObjects.
	refuseSameObjects bool
}

// check makes every check, in order.
func (c *identityChecker) check() {
	if c.name != "" {
		for _, msg := range validation.IsValidLabelValue(c.name) {
			c.diag.fail(&Error{Path: "metadata.name", Err: errorf(ErrInvalid, "the name labels every object the graph creates: %s", msg)})
		}
	}
	for _, r := range c.resources {
		if len(r.node.ID) > validation.LabelValueMaxLength {
			c.diag.fail(&Error{ResourceID: r.node.ID, Path: "id", Err: errorf(ErrInvalid, "the id labels the objects it creates: must be no more than %d characters", validation.LabelValueMaxLength)})
		}
		c.checkScope(r)
		c.checkIteratorsInName(r)
	}
	c.checkSameObjects()
}

// metadataField returns the template's metadata.<name> as written, and
// whether it is set.
func (r *resource) metadataField(name string) (any, bool) {
	if r.src.ExternalRef != nil {
		md := r.src.ExternalRef.Metadata
		v := map[string]string{"name": md.Name, "namespace": md.Namespace}[name]
		return v, v != ""
	}
	md, _ := r.template["metadata"].(map[string]any)
	v, ok := md[name]
	return v, ok
}

// checkScope applies kro's rules when the kind's scope is known: a
// cluster-scoped kind has no namespace, and under a cluster-scoped instance
// a namespaced kind must name its namespace (there is no instance
// namespace to default to), except an externalRef by selector, which then
// reads every namespace. With no ScopeResolver nothing is checked, and a
// namespaced child of a cluster-scoped instance goes to "default".
func (c *identityChecker) checkScope(r *resource) {
	if c.scopes == nil || r.node.GVK.Kind == "" {
		return
	}
	namespaced, err := c.scopes.IsNamespaced(r.node.GVK)
	if err != nil {
		return // resolveKinds reports unknown kinds
	}
	ns, set := r.metadataField("namespace")
	s, _ := ns.(string)
	path := "metadata.namespace"
	if r.node.External {
		path = "externalRef.metadata.namespace"
	}
	switch {
	case !namespaced && set:
		c.diag.fail(&Error{ResourceID: r.node.ID, Path: path, Err: errorf(ErrInvalid, "%s is cluster-scoped and must not set a namespace", r.node.GVK.Kind)})
	case namespaced && !c.namespaced && strings.TrimSpace(s) == "" && !(r.node.External && r.node.Collection):
		c.diag.fail(&Error{ResourceID: r.node.ID, Path: path, Err: errorf(ErrInvalid, "%s is namespaced and the instance is cluster-scoped: the namespace must be set", r.node.GVK.Kind)})
	}
}

// checkIteratorsInName refuses, as kro does, a forEach whose iterators do
// not all appear in metadata.name or metadata.namespace: two iterations
// would otherwise render the same object. In a hub graph the target is
// part of the object's identity too, so an iterator that picks the
// cluster (one object per cluster of the fleet) may appear there instead.
func (c *identityChecker) checkIteratorsInName(r *resource) {
	if len(r.iterators) == 0 {
		return
	}
	used := map[string]bool{}
	for _, field := range []string{"name", "namespace"} {
		v, _ := r.metadataField(field)
		s, _ := v.(string)
		c.markIdentifiers(s, used)
	}
	where := "metadata.name or metadata.namespace"
	if t, _ := targetOf(c.rgd, r.src); t != nil && t.Cluster != nil {
		c.markIdentifiers(t.Cluster.Name, used)
		where = "metadata.name, metadata.namespace or the target"
	}
	for _, it := range r.iterators {
		if !used[it.name] {
			c.diag.fail(&Error{ResourceID: r.node.ID, Path: "metadata.name", Err: errorf(ErrInvalid, "forEach iterator %q must be used in %s, or its iterations render the same object", it.name, where)})
		}
	}
}

// markIdentifiers marks in used every identifier that s's expressions read.
func (c *identityChecker) markIdentifiers(s string, used map[string]bool) {
	segs, err := expr.Scan(s)
	if err != nil {
		return
	}
	for _, seg := range segs {
		if seg.Expr {
			for _, id := range parsedIdentifiers(c.env, seg.Text) {
				used[id] = true
			}
		}
	}
}
