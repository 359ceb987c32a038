package hubgraph

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Options.ConfineToNamespace holds for hub graphs as for spoke graphs (see
// the spoke runtime's confine.go): a confined instance's children and
// external references stay in the instance's namespace, in whatever
// cluster they are; a cluster-scoped instance writes and reads nothing
// unless its graph is one of Options.ClusterScopedGraphs.

// ErrOutsideNamespace is wrapped by the error of a child or external
// reference that Options.ConfineToNamespace refuses.
var ErrOutsideNamespace = errors.New("outside the instance's namespace")

const reasonOutsideNamespace = "OutsideNamespace"

// confined checks the object of kind gvk in namespace ns (its namespace
// defaulted already) against Options.ConfineToNamespace.
func (a *applier) confined(inst *unstructured.Unstructured, gvk schema.GroupVersionKind, ns, name string, namespaced bool) error {
	if !a.rt.opts.Instances.ConfineToNamespace {
		return nil
	}
	object := gvk.Kind + " " + name
	if namespaced {
		object = fmt.Sprintf("%s %s/%s", gvk.Kind, ns, name)
	}
	home := inst.GetNamespace()
	switch {
	case home == "" && slices.Contains(a.rt.opts.Instances.ClusterScopedGraphs, a.g.Name):
		return nil
	case home == "":
		return fmt.Errorf("%s would be %w: the instance is cluster-scoped, and graph %q is not one of the cluster-scoped graphs allowed", object, ErrOutsideNamespace, a.g.Name)
	case !namespaced:
		return fmt.Errorf("%s is cluster-scoped, %w %q", object, ErrOutsideNamespace, home)
	case ns != home:
		return fmt.Errorf("%s is in namespace %q, %w %q", object, ns, ErrOutsideNamespace, home)
	}
	return nil
}
