package spoke

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// evalExternal reads an externalRef from the cluster's cache (watching its
// kind), never writing it. A reference by name yields the object; one by
// selector yields the list of matching objects.
func (m *member) evalExternal(ctx context.Context, inst *unstructured.Unstructured, n *graph.Node, vals graph.Values) *nodeResult {
	ref, err := n.Ref(ctx, vals)
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
		// A selector without a namespace selects in every namespace, as
		// kro's does, unless the instance is confined to its own.
		if resolved.namespace == "" && (ref.Selector == nil || m.c.opts.ConfineToNamespace) {
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
	// Refused before anything is watched or read (confine.go).
	if err := m.confinedRef(inst, resolved, namespaced); err != nil {
		return failed(n, reasonOutsideNamespace, err)
	}
	r := &nodeResult{state: nodeReady, refs: []resolvedRef{resolved}}
	if err := m.ensureScoped(resolved); err != nil {
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
	return m.readiness(ctx, n, vals, r, items)
}

// readExternal returns the referenced objects from the reference's scoped
// informer: nil when a reference by name finds nothing.
func (m *member) readExternal(ref resolvedRef) ([]any, error) {
	items, err := m.scopedItems(ref)
	if errors.Is(err, errNotWatched) {
		if err := m.ensureScoped(ref); err != nil {
			return nil, err
		}
		items, err = m.scopedItems(ref)
	}
	if err != nil {
		return nil, err
	}
	if ref.selector == nil && len(items) == 0 {
		return nil, nil
	}
	if items == nil {
		items = []any{}
	}
	return items, nil
}
