package spoke

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// evalExternal reads an externalRef from the cluster's cache (watching its
// kind), never writing it. A reference by name yields the object; one by
// selector yields the list of matching objects.
func (m *member) evalExternal(inst *unstructured.Unstructured, n *graph.Node, vals graph.Values) *nodeResult {
	ref, err := n.Ref(vals)
	if err != nil {
		return evalError(n, "externalRef", err)
	}
	if ref.GVK.Empty() {
		ref.GVK = n.GVK
	}
	namespaced, err := m.namespaced(ref.GVK)
	if err != nil {
		return failed(n, reasonEvaluationFailed, err)
	}
	resolved := resolvedRef{gvk: ref.GVK, name: ref.Name}
	if namespaced {
		resolved.namespace = ref.Namespace
		if resolved.namespace == "" && ref.Selector == nil {
			resolved.namespace = defaultNamespace(inst)
		}
	}
	if ref.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return failed(n, reasonEvaluationFailed, fmt.Errorf("externalRef selector: %w", err))
		}
		resolved.selector = sel
	}
	r := &nodeResult{state: nodeReady, refs: []resolvedRef{resolved}}
	if err := m.ensureWatch(ref.GVK, true); err != nil {
		return failed(n, reasonEvaluationFailed, err)
	}
	items, err := m.readExternal(resolved)
	if err != nil {
		r.state, r.reason, r.err = nodeFailed, reasonEvaluationFailed, err
		r.message = fmt.Sprintf("%s: reading external %s: %v", n.ID, ref.GVK.Kind, err)
		return r
	}
	if items == nil {
		r.state = nodePending
		r.message = fmt.Sprintf("%s: waiting for external %s %s", n.ID, ref.GVK.Kind,
			types.NamespacedName{Namespace: resolved.namespace, Name: resolved.name})
		return r
	}
	r.observed = observedValue(resolved.selector != nil, items)
	return m.readiness(n, vals, r, items)
}

// readExternal returns the referenced objects from the cache: nil when a
// reference by name finds nothing.
func (m *member) readExternal(ref resolvedRef) ([]any, error) {
	if ref.selector == nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.gvk)
		err := m.cl.GetCache().Get(m.ctx, types.NamespacedName{Namespace: ref.namespace, Name: ref.name}, u)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []any{u.Object}, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ref.gvk.GroupVersion().WithKind(ref.gvk.Kind + "List"))
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: ref.selector}}
	if ref.namespace != "" {
		opts = append(opts, client.InNamespace(ref.namespace))
	}
	if err := m.cl.GetCache().List(m.ctx, list, opts...); err != nil {
		return nil, err
	}
	items := make([]any, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, list.Items[i].Object)
	}
	return items, nil
}
