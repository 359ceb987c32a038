package spoke

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// applier writes a member's children: one server-side apply each, after
// checking that the object is the instance's to write (ownership.go) and,
// under Options.ConfineToNamespace, that it stays in the instance's
// namespace (confine.go). The apply memory saves the applies that would
// change nothing.
type applier struct{ m *member }

// child writes one rendered child with server-side apply and returns the
// object as the API server answered, which is what dependents and
// readyWhen see. If the desired form is unchanged since our last apply and
// nobody touched the child since, the remembered answer is returned and no
// request is made, unless full (a periodic resync) asks for the apply
// regardless. An existing object that is not the instance's is refused
// (claim).
//
// keep says whether anything reads the answer (graph.Graph.Reads): if not,
// child returns nil and neither keeps nor remembers the answer, so that a
// node of many large children (a megabyte each) costs the hub one child at
// a time rather than all of them until the reconcile ends, and for as long
// as they exist.
func (a applier) child(inst *unstructured.Unstructured, n *graph.Node, u *unstructured.Unstructured, full, keep bool) (map[string]any, InventoryEntry, error) {
	m := a.m
	gvk := u.GroupVersionKind()
	entry := InventoryEntry{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), Node: n.ID}
	namespaced, err := m.namespaced(gvk)
	if err != nil {
		return nil, entry, err
	}
	if namespaced && u.GetNamespace() == "" {
		u.SetNamespace(defaultNamespace(inst))
	}
	if !namespaced {
		u.SetNamespace("")
	}
	entry.Namespace = u.GetNamespace()
	if err := a.confined(inst, gvk, u, namespaced); err != nil {
		return nil, entry, err
	}
	u.SetLabels(a.ownership(inst, n, u.GetLabels()))

	key := newChildKey(gvk, u.GetNamespace(), u.GetName())
	hash, err := hashOf(u)
	if err != nil {
		return nil, entry, err
	}
	switch {
	case full:
	case !keep:
		if m.memory.unchanged(key, hash) {
			return nil, entry, nil
		}
	default:
		if observed, ok := m.memory.applied(key, hash); ok {
			return observed, entry, deleting(n, key, observed)
		}
	}
	if err := m.watches.childKind(gvk); err != nil {
		return nil, entry, err
	}
	if err := a.claim(inst, n, key); err != nil {
		return nil, entry, err
	}
	owner := keyOf(inst)
	m.memory.begin(key, owner)
	ctx, cancel := m.callCtx()
	err = m.cl.GetClient().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(m.c.opts.FieldManager), client.ForceOwnership)
	cancel()
	// Nothing reads who manages which field, and it is a third of a
	// Deployment's answer: it is neither kept nor shown to expressions.
	u.SetManagedFields(nil)
	end := m.memory.end
	if !keep {
		end = m.memory.endWithoutAnswer
	}
	if end(key, hash, u, err) {
		m.enqueue(owner)
	}
	if err != nil {
		return nil, entry, err
	}
	m.recordChild(key, inst.GetUID(), n.ID, u.GetUID())
	if err := deleting(n, key, u.Object); err != nil {
		return nil, entry, err // deleted while we applied
	}
	if !keep {
		return nil, entry, nil
	}
	return u.Object, entry, nil
}

// ownership returns the child's labels with ours added.
func (a applier) ownership(inst *unstructured.Unstructured, n *graph.Node, l map[string]string) map[string]string {
	out := maps.Clone(l)
	if out == nil {
		out = map[string]string{}
	}
	out[contract.LabelManagedBy] = contract.ManagedBy
	out[contract.LabelGraph] = a.m.graphLabel
	out[contract.LabelNodeID] = contract.LabelValue(n.ID)
	out[contract.LabelInstanceUID] = string(inst.GetUID())
	out[contract.LabelInstanceName] = contract.LabelValue(inst.GetName())
	out[contract.LabelInstanceNamespace] = inst.GetNamespace()
	return out
}

// defaultNamespace is where namespaced children of inst go when their
// template names none.
func defaultNamespace(inst *unstructured.Unstructured) string {
	if ns := inst.GetNamespace(); ns != "" {
		return ns
	}
	return "default"
}

func hashOf(u *unstructured.Unstructured) (desiredHash, error) {
	b, err := json.Marshal(u.Object)
	if err != nil {
		return 0, fmt.Errorf("encoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return max(desiredHash(h.Sum64()), 1), nil // 0 is "apply again"
}
