package instance

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// placementError is the error of an item its driver could not place.
type placementError struct{ err error }

func (e *placementError) Error() string { return e.err.Error() }
func (e *placementError) Unwrap() error { return e.err }

// applyChild writes one rendered child, in the cluster the outcome's
// placement gives it, with server-side apply, and returns the object as
// the API server answered, which is what dependents and readyWhen see. If
// the desired form is unchanged since our last apply there and nobody
// touched the child since, the remembered answer is returned and no
// request is made, unless the outcome is a full resync. An existing
// object that is not the instance's is refused (claim.go), and so is one
// outside the instance's namespace when it is confined (confine.go).
//
// keep says whether anything reads the answer (graph.Graph.Reads): if not,
// applyChild returns nil and neither keeps nor remembers the answer, so
// that a node of many large children (a megabyte each) costs the process
// one child at a time rather than all of them until the reconcile ends,
// and for as long as they exist.
func (ev evaluator) applyChild(o *Outcome, inst *unstructured.Unstructured, n *graph.Node, d rendered, keep bool) appliedChild {
	e := ev.e
	u := d.u
	gvk := u.GroupVersionKind()
	a := appliedChild{entry: Entry{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), Node: n.ID}}
	c, err := o.where.Place(n, d.item)
	if err != nil {
		a.err = &placementError{err}
		return a
	}
	a.entry.Cluster = c.name
	if down := o.down.err(c.name); down != nil {
		a.err = down
		return a
	}
	p := e.places.of(e, c)
	a.where = p.where()
	namespaced, err := p.namespaced(gvk)
	if err != nil {
		a.err = err
		return a
	}
	if namespaced && u.GetNamespace() == "" {
		u.SetNamespace(defaultNamespace(inst))
	}
	if !namespaced {
		u.SetNamespace("")
	}
	a.entry.Namespace = u.GetNamespace()
	if a.err = e.confine.child(inst, gvk, u, namespaced); a.err != nil {
		return a
	}
	u.SetLabels(e.owner.labels(inst, n, u.GetLabels()))
	a.observed, a.err = p.apply(o, inst, n, u, keep)
	return a
}

// apply writes u, a child of inst rendered by n, in the place's cluster,
// unless the memory says it would change nothing.
func (p *place) apply(o *Outcome, inst *unstructured.Unstructured, n *graph.Node, u *unstructured.Unstructured, keep bool) (map[string]any, error) {
	e := p.e
	gvk := u.GroupVersionKind()
	key := newChildKey(gvk, u.GetNamespace(), u.GetName())
	hash, err := hashOf(u)
	if err != nil {
		return nil, err
	}
	switch {
	case o.full:
	case !keep:
		if p.memory.unchanged(key, hash) {
			return nil, nil
		}
	default:
		if observed, ok := p.memory.applied(key, hash); ok {
			return observed, deleting(n, key, observed)
		}
	}
	if err := p.watches.childKind(gvk); err != nil {
		return nil, err
	}
	if err := p.claim(inst, n, key); err != nil {
		return nil, err
	}
	owner := keyOf(inst)
	p.memory.begin(key, owner)
	ctx, cancel := p.callCtx()
	err = p.c.GetClient().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(e.opts.FieldManager), client.ForceOwnership)
	cancel()
	// Nothing reads who manages which field, and it is a third of a
	// Deployment's answer: it is neither kept nor shown to expressions.
	u.SetManagedFields(nil)
	end := p.memory.end
	if !keep {
		end = p.memory.endWithoutAnswer
	}
	if end(key, hash, u, err) {
		e.enqueue(owner)
	}
	if err != nil {
		return nil, err
	}
	p.recordChild(key, inst.GetUID(), n.ID, u.GetUID())
	if err := deleting(n, key, u.Object); err != nil {
		return nil, err // deleted while we applied
	}
	if !keep {
		return nil, nil
	}
	return u.Object, nil
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
