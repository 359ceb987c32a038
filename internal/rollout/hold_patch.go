package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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

// HoldFieldManager is the field manager Controller.Hold and Release
// write spec.holds as.
const HoldFieldManager = "fleetgraph-hold"

// Hold pins the named cluster to the revision it serves, in the
// GraphRollout named name or the one that rules the graph named name: it
// adds a hold naming the cluster to spec.holds (nothing when one already
// names it). It returns ErrNoRollout when there is no such GraphRollout.
func (c *Controller) Hold(ctx context.Context, name, cluster, reason string) error {
	return c.editHolds(ctx, name, func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, error) {
		for _, h := range ro.Spec.Holds {
			if slices.Contains(h.Clusters, cluster) {
				return nil, nil
			}
		}
		return append(ro.Spec.Holds, fgv1alpha1.Hold{Clusters: []string{cluster}, Reason: reason}), nil
	})
}

// Release takes the named cluster out of every hold that names it, in the
// GraphRollout named name or the one that rules the graph named name; a
// hold left naming no cluster goes. It returns ErrNoRollout when there is
// no such GraphRollout, ErrHeldBySelector when only a selector holds the
// cluster, and ErrNotHeld when no hold takes it.
func (c *Controller) Release(ctx context.Context, name, cluster string) error {
	return c.editHolds(ctx, name, func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, error) {
		out := make([]fgv1alpha1.Hold, 0, len(ro.Spec.Holds))
		found := false
		for _, h := range ro.Spec.Holds {
			if !slices.Contains(h.Clusters, cluster) {
				out = append(out, h)
				continue
			}
			found = true
			if h.Clusters = slices.DeleteFunc(slices.Clone(h.Clusters), func(n string) bool { return n == cluster }); len(h.Clusters) > 0 {
				out = append(out, h)
			}
		}
		if found {
			return out, nil
		}
		if c.heldBySelector(ro, cluster) {
			return nil, fmt.Errorf("cluster %q in GraphRollout %s: %w", cluster, ro.Name, ErrHeldBySelector)
		}
		return nil, fmt.Errorf("cluster %q in GraphRollout %s: %w", cluster, ro.Name, ErrNotHeld)
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

// editHolds replaces spec.holds with what edit returns (nil: nothing to
// change), on the precondition that the GraphRollout has not changed
// since it was read; a conflict reads it again.
func (c *Controller) editHolds(ctx context.Context, name string, edit func(*fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ro, err := c.find(ctx, name)
		if err != nil {
			return err
		}
		holds, err := edit(ro)
		if err != nil || holds == nil {
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
		if err := c.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(HoldFieldManager)); err != nil {
			return fmt.Errorf("editing the holds of GraphRollout %s: %w", ro.Name, err)
		}
		return nil
	})
}
