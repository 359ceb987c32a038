package instance

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// external reads an externalRef, in the cluster the placement gives its
// node, through a scoped informer of its own (external_watch.go), never
// writing it. A reference by name yields the object; one by selector
// yields the list of matching objects.
func (ev evaluator) external(o *Outcome, inst *unstructured.Unstructured, n *graph.Node) *nodeResult {
	e := ev.e
	ref, err := n.Ref(o.ctx, o.vals)
	if err != nil {
		return evalError(n, "externalRef", err)
	}
	if ref.GVK.Empty() {
		ref.GVK = n.GVK
	}
	c, err := o.where.Place(n, 0)
	if err != nil {
		return failed(n, ReasonEvaluationFailed, err)
	}
	if down := o.down.err(c.name); down != nil {
		return unreachableNode(n, o, c.name, down)
	}
	p := e.places.of(e, c)
	namespaced, err := p.namespaced(ref.GVK)
	if unreachable(err) {
		return unreachableNode(n, o, c.name, err)
	}
	if err != nil {
		return failed(n, ReasonEvaluationFailed, err)
	}
	resolved := resolvedRef{cluster: c.name, gvk: ref.GVK, name: ref.Name}
	if namespaced {
		resolved.namespace = ref.Namespace
		// A selector without a namespace selects in every namespace, as
		// kro's does, unless the instance is confined to its own.
		if resolved.namespace == "" && (ref.Selector == nil || e.opts.ConfineToNamespace) {
			resolved.namespace = defaultNamespace(inst)
		}
	}
	if ref.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return failed(n, ReasonEvaluationFailed, fmt.Errorf("externalRef selector: %w", err))
		}
		resolved.selector = sel
	}
	// Refused before anything is watched or read (confine.go).
	if err := e.confine.ref(inst, resolved, namespaced); err != nil {
		return failed(n, ReasonOutsideNamespace, fmt.Errorf("%w%s", err, p.where()))
	}
	r := &nodeResult{state: nodeReady, refs: []resolvedRef{resolved}}
	items, err := e.refs.read(p, resolved)
	if unreachable(err) {
		r = unreachableNode(n, o, c.name, err)
		r.refs = []resolvedRef{resolved}
		return r
	}
	if err != nil {
		r.state, r.reason, r.err = nodeFailed, ReasonEvaluationFailed, err
		r.message = fmt.Sprintf("%s: reading external %s%s: %v", n.ID, ref.GVK.Kind, p.where(), err)
		return r
	}
	if items == nil {
		r.state = nodePending
		r.message = fmt.Sprintf("%s: waiting for external %s %s%s", n.ID, ref.GVK.Kind,
			types.NamespacedName{Namespace: resolved.namespace, Name: resolved.name}, p.where())
		return r
	}
	r.observed = observedValue(resolved.selector != nil, items)
	return ev.readiness(o.ctx, n, o.vals, r, items)
}

// unreachableNode is the result of a node whose cluster, called name, did
// not answer (err).
func unreachableNode(n *graph.Node, o *Outcome, name string, err error) *nodeResult {
	o.down.set(name, err)
	return &nodeResult{state: nodeUnreachable, err: err, message: fmt.Sprintf("%s: %v", n.ID, unreachableError(name, err))}
}
