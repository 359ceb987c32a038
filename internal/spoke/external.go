package spoke

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// external reads an externalRef through a scoped informer of its own
// (external_watch.go), never writing it. A reference by name yields the
// object; one by selector yields the list of matching objects.
func (e evaluator) external(ctx context.Context, inst *unstructured.Unstructured, n *graph.Node, vals graph.Values) *nodeResult {
	m := e.m
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
	if err := m.applier.confinedRef(inst, resolved, namespaced); err != nil {
		return failed(n, reasonOutsideNamespace, err)
	}
	r := &nodeResult{state: nodeReady, refs: []resolvedRef{resolved}}
	if err := m.refs.ensure(resolved); err != nil {
		return failed(n, reasonEvaluationFailed, err)
	}
	items, err := m.refs.read(resolved)
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
	return e.readiness(ctx, n, vals, r, items)
}
