package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// Errors Release returns.
var (
	// ErrNotHeld: no hold of the rollout takes the cluster.
	ErrNotHeld = errors.New("no hold of the rollout takes the cluster")
	// ErrHeldBySelector: a hold takes the cluster by its labels, which
	// releasing by name cannot change; edit or remove that hold.
	ErrHeldBySelector = errors.New("a hold takes the cluster by label selector")
)

// HoldFieldManager is the field manager Controller.Hold and Release, and
// the fleetgraph command's rollout hold and release, write spec.holds as.
const HoldFieldManager = "fleetgraph-hold"

// Hold pins the named cluster to the revision it serves, in the
// GraphRollout named name or the one that rules the graph named name: it
// adds a hold naming the cluster to spec.holds (nothing when one already
// names it). It returns ErrNoRollout when there is no such GraphRollout.
func (c *Controller) Hold(ctx context.Context, name, cluster, reason string) error {
	return EditHolds(ctx, c.Client, func(ctx context.Context) (*fgv1alpha1.GraphRollout, error) { return c.find(ctx, name) },
		func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error) {
			holds, changed := HoldClusters(ro.Spec.Holds, []string{cluster}, reason)
			return holds, changed, nil
		})
}

// Release takes the named cluster out of every hold that names it, in the
// GraphRollout named name or the one that rules the graph named name; a
// hold left naming no cluster goes. It returns ErrNoRollout when there is
// no such GraphRollout, ErrHeldBySelector when only a selector holds the
// cluster, and ErrNotHeld when no hold takes it.
func (c *Controller) Release(ctx context.Context, name, cluster string) error {
	return EditHolds(ctx, c.Client, func(ctx context.Context) (*fgv1alpha1.GraphRollout, error) { return c.find(ctx, name) },
		func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error) {
			holds, err := ReleaseClusters(ro, []string{cluster}, func(n string) bool { return c.heldBySelector(ro, n) })
			return holds, err == nil, err
		})
}

// heldBySelector reports whether a hold of ro takes the named engaged
// cluster by its labels.
func (c *Controller) heldBySelector(ro *fgv1alpha1.GraphRollout, cluster string) bool {
	for _, cl := range c.Planner.clusters() {
		if cl.Name != cluster {
			continue
		}
		for _, h := range ro.Spec.Holds {
			if h.ClusterSelector != nil && holds(h, cluster, cl.Labels) {
				return true
			}
		}
	}
	return false
}

// HoldClusters returns holds with one more hold naming those of clusters
// that no hold names yet, with reason, and whether that changed anything
// (false when every one is named already).
func HoldClusters(holds []fgv1alpha1.Hold, clusters []string, reason string) ([]fgv1alpha1.Hold, bool) {
	var add []string
	for _, name := range clusters {
		named := slices.Contains(add, name)
		for _, h := range holds {
			named = named || slices.Contains(h.Clusters, name)
		}
		if !named {
			add = append(add, name)
		}
	}
	if len(add) == 0 {
		return holds, false
	}
	return append(slices.Clone(holds), fgv1alpha1.Hold{Clusters: add, Reason: reason}), true
}

// HoldSelector returns holds with one more hold taking the clusters sel
// selects, with reason, and whether that changed anything (false when a
// hold of an equal selector exists).
func HoldSelector(holds []fgv1alpha1.Hold, sel *metav1.LabelSelector, reason string) ([]fgv1alpha1.Hold, bool) {
	for _, h := range holds {
		if h.ClusterSelector != nil && apiequality.Semantic.DeepEqual(h.ClusterSelector, sel) {
			return holds, false
		}
	}
	return append(slices.Clone(holds), fgv1alpha1.Hold{ClusterSelector: sel, Reason: reason}), true
}

// ReleaseClusters returns ro's holds with each of clusters taken out of
// every hold that names it; a hold left naming none goes. Each cluster
// must be named by a hold: one that is not fails the whole release, with
// ErrHeldBySelector when bySelector says a selector holds it, else with
// ErrNotHeld, naming the cluster and the rollout.
func ReleaseClusters(ro *fgv1alpha1.GraphRollout, clusters []string, bySelector func(cluster string) bool) ([]fgv1alpha1.Hold, error) {
	var errs []error
	for _, name := range clusters {
		named := false
		for _, h := range ro.Spec.Holds {
			named = named || slices.Contains(h.Clusters, name)
		}
		switch {
		case named:
		case bySelector(name):
			errs = append(errs, fmt.Errorf("cluster %q in GraphRollout %s: %w", name, ro.Name, ErrHeldBySelector))
		default:
			errs = append(errs, fmt.Errorf("cluster %q in GraphRollout %s: %w", name, ro.Name, ErrNotHeld))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]fgv1alpha1.Hold, 0, len(ro.Spec.Holds))
	for _, h := range ro.Spec.Holds {
		if h.ClusterSelector == nil {
			h.Clusters = slices.DeleteFunc(slices.Clone(h.Clusters), func(n string) bool { return slices.Contains(clusters, n) })
			if len(h.Clusters) == 0 {
				continue
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// ReleaseSelector returns ro's holds without those whose selector equals
// sel; ErrNotHeld, naming the selector and the rollout, when none does.
func ReleaseSelector(ro *fgv1alpha1.GraphRollout, sel *metav1.LabelSelector) ([]fgv1alpha1.Hold, error) {
	out := make([]fgv1alpha1.Hold, 0, len(ro.Spec.Holds))
	for _, h := range ro.Spec.Holds {
		if h.ClusterSelector == nil || !apiequality.Semantic.DeepEqual(h.ClusterSelector, sel) {
			out = append(out, h)
		}
	}
	if len(out) == len(ro.Spec.Holds) {
		return nil, fmt.Errorf("selector %q in GraphRollout %s: %w", metav1.FormatLabelSelector(sel), ro.Name, ErrNotHeld)
	}
	return out, nil
}

// EditHolds replaces the spec.holds of the GraphRollout find reads with
// what edit returns, unless edit says nothing changed; the patch is made
// as HoldFieldManager, on the precondition that the GraphRollout has not
// changed since it was read, and a conflict reads it again.
func EditHolds(ctx context.Context, c client.Client, find func(context.Context) (*fgv1alpha1.GraphRollout, error),
	edit func(*fgv1alpha1.GraphRollout) (holds []fgv1alpha1.Hold, changed bool, err error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ro, err := find(ctx)
		if err != nil {
			return err
		}
		holds, changed, err := edit(ro)
		if err != nil || !changed {
			return err
		}
		value := any(holds)
		if len(holds) == 0 {
			value = nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": ro.ResourceVersion},
			"spec":     map[string]any{"holds": value},
		})
		if err != nil {
			return fmt.Errorf("editing the holds of GraphRollout %s: %w", ro.Name, err)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
		u.SetName(ro.Name)
		if err := c.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(HoldFieldManager)); err != nil {
			return fmt.Errorf("editing the holds of GraphRollout %s: %w", ro.Name, err)
		}
		return nil
	})
}
