package spoke

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrOutsideNamespace is wrapped by the error of a child that
// Options.ConfineToNamespace refuses: a namespaced instance rendered it in
// another namespace, or cluster-scoped. The child is not written and the
// instance goes to ERROR with reason OutsideNamespace.
var ErrOutsideNamespace = errors.New("outside the instance's namespace")

// reasonOutsideNamespace is the node's reason for a refused child.
const reasonOutsideNamespace = "OutsideNamespace"

// confined checks, when Options.ConfineToNamespace is set, that child u
// (its namespace defaulted already) of a namespaced instance stays in the
// instance's namespace. Cluster-scoped instances are not confined.
func (m *member) confined(inst *unstructured.Unstructured, gvk schema.GroupVersionKind, u *unstructured.Unstructured, namespaced bool) error {
	ns := inst.GetNamespace()
	if !m.c.opts.ConfineToNamespace || ns == "" {
		return nil
	}
	switch {
	case !namespaced:
		return fmt.Errorf("%s %s is cluster-scoped, %w %q", gvk.Kind, u.GetName(), ErrOutsideNamespace, ns)
	case u.GetNamespace() != ns:
		return fmt.Errorf("%s %s/%s is in namespace %q, %w %q", gvk.Kind, u.GetNamespace(), u.GetName(), u.GetNamespace(), ErrOutsideNamespace, ns)
	}
	return nil
}
