package instance

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reach is one cluster an instance may have children in, as its driver
// finds it now: its handle, or why it cannot be reached (it is not
// engaged). A spoke instance's only one is its own cluster; a hub
// instance's are those it recorded.
type Reach struct {
	// Name is the cluster's name.
	Name string
	// Cluster is the cluster; nil when Err is set.
	Cluster *Cluster
	// Err says why the cluster cannot be reached.
	Err error
}

// HomeReach is the instance's own cluster, the only one its children live
// in when every node is placed there.
func (e *Engine) HomeReach() []Reach { return []Reach{{Name: e.home.name, Cluster: e.home}} }

// Prune deletes the instance's children that the outcome no longer wants,
// in every cluster of clusters it could reach: nothing after a failure,
// nothing of a node not resolved yet (toPrune). Errors are joined; a
// child already gone is not an error.
func (e *Engine) Prune(inst *unstructured.Unstructured, o *Outcome, clusters []Reach) error {
	if o.failed != nil {
		return nil
	}
	var errs []error
	for _, r := range clusters {
		if r.Err != nil {
			errs = append(errs, r.Err)
			continue
		}
		if o.down.err(r.Name) != nil {
			continue
		}
		p := e.places.of(e, r.Cluster)
		current, err := p.inventory(inst)
		if unreachable(err) {
			o.down.set(r.Name, err)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("listing children%s: %w", p.where(), err))
			continue
		}
		for _, en := range toPrune(current, o) {
			if err := p.deleteChild(en); err != nil {
				errs = append(errs, fmt.Errorf("pruning %s%s: %w", en, p.where(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// deleteChild asks the API server to delete one child in the background,
// on the precondition that it is still the object our records name (its
// UID): an object that took the name since is not ours and is left alone,
// and an object our records do not name (one that only carries our
// labels) is never deleted.
func (p *place) deleteChild(en Entry) error {
	c, ok := p.owned.indexed(en.key())
	p.memory.forget(en.key())
	if !ok || c.uid == "" {
		p.dropChild(en.key())
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(en.gvk())
	u.SetNamespace(en.Namespace)
	u.SetName(en.Name)
	ctx, cancel := p.callCtx()
	defer cancel()
	err := p.c.GetClient().Delete(ctx, u, client.PropagationPolicy("Background"), client.Preconditions{UID: &c.uid})
	if apierrors.IsNotFound(err) || isNoMatch(err) || apierrors.IsConflict(err) {
		p.dropChild(en.key())
		return nil
	}
	return err
}
