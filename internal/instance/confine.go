package instance

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Options.ConfineToNamespace is enforced here, in the engine, at the
// moment a child would be written or an external reference read, in
// whatever cluster: the engine is what writes and reads, a graph compiled
// once may be served by runtimes with and without the option (a
// platform's own agent embeds the spoke runtime alone), and refusing per
// instance keeps deletion working for instances made before the option
// was turned on. The refusal names the
// resource id and the object, on the instance (ERROR, reason
// OutsideNamespace) and in a Warning event; nothing is written, and no
// watch is opened for a refused reference.
//
// Confined, an instance's children and external references stay in its
// namespace: a namespaced object elsewhere, any cluster-scoped object, and
// a selector reaching beyond the namespace (one without a namespace is
// scoped to the instance's) are refused. A cluster-scoped instance has no
// namespace to stay in: its children and references are refused unless its
// graph is one of Options.ClusterScopedGraphs, which the platform trusts
// and which runs unconfined, as kro.

// ErrOutsideNamespace is wrapped by the error of a child or external
// reference that Options.ConfineToNamespace refuses: a namespaced instance
// rendered it in another namespace or of a cluster-scoped kind, or the
// instance is cluster-scoped and its graph is not one of
// Options.ClusterScopedGraphs. The child is not written (the reference not
// read) and the instance goes to ERROR with reason OutsideNamespace.
var ErrOutsideNamespace = errors.New("outside the instance's namespace")

// ReasonOutsideNamespace is the node's reason for a refused child or
// reference.
const ReasonOutsideNamespace = "OutsideNamespace"

// confinement is Options.ConfineToNamespace as one graph's engine applies
// it.
type confinement struct {
	on bool
	// graph is the graph's name; allowed says whether ClusterScopedGraphs
	// lists it.
	graph   string
	allowed bool
}

func newConfinement(g string, opts Options) confinement {
	return confinement{on: opts.ConfineToNamespace, graph: g, allowed: slices.Contains(opts.ClusterScopedGraphs, g)}
}

// child checks, when the instance is confined, that child u (its
// namespace defaulted already) stays in the instance's namespace.
func (c confinement) child(inst *unstructured.Unstructured, gvk schema.GroupVersionKind, u *unstructured.Unstructured, namespaced bool) error {
	return c.to(inst, describe(gvk, u.GetNamespace(), u.GetName(), namespaced), u.GetNamespace(), namespaced)
}

// ref checks, when the instance is confined, that an external reference
// (its namespace defaulted already) stays in the instance's namespace.
func (c confinement) ref(inst *unstructured.Unstructured, ref resolvedRef, namespaced bool) error {
	object := describe(ref.gvk, ref.namespace, ref.name, namespaced)
	if ref.selector != nil {
		object = fmt.Sprintf("%s selected by %q", ref.gvk.Kind, ref.selector.String())
	}
	return c.to(inst, object, ref.namespace, namespaced)
}

// to checks an object (described for messages) in namespace ns.
func (c confinement) to(inst *unstructured.Unstructured, object, ns string, namespaced bool) error {
	if !c.on {
		return nil
	}
	home := inst.GetNamespace()
	switch {
	case home == "" && c.allowed:
		return nil
	case home == "":
		return fmt.Errorf("%s would be %w: the instance is cluster-scoped, and graph %q is not one of the cluster-scoped graphs allowed", object, ErrOutsideNamespace, c.graph)
	case !namespaced:
		return fmt.Errorf("%s is cluster-scoped, %w %q", object, ErrOutsideNamespace, home)
	case ns != home:
		return fmt.Errorf("%s is in namespace %q, %w %q", object, ns, ErrOutsideNamespace, home)
	}
	return nil
}

// describe is "Kind namespace/name", or "Kind name" for a cluster-scoped
// kind.
func describe(gvk schema.GroupVersionKind, ns, name string, namespaced bool) string {
	if namespaced {
		return fmt.Sprintf("%s %s/%s", gvk.Kind, ns, name)
	}
	return gvk.Kind + " " + name
}
