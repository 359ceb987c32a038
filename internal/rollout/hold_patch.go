package rollout

import (
	"context"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/hold"
)

// Hold pins the named cluster to the revision it serves, in the
// GraphRollout named name or the one that rules the graph named name: it
// adds a hold naming the cluster to spec.holds (nothing when one already
// names it), with the hold package's edit. It returns ErrNoRollout when
// there is no such GraphRollout, and otherwise what hold.Clusters returns.
func (c *Controller) Hold(ctx context.Context, name, cluster, reason string) error {
	return hold.Edit(ctx, c.Client, func(ctx context.Context) (*fgv1alpha1.GraphRollout, error) { return c.find(ctx, name) },
		func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error) {
			return hold.Clusters(ro, []string{cluster}, reason)
		})
}

// Release takes the named cluster out of every hold that names it, in the
// GraphRollout named name or the one that rules the graph named name; a
// hold left naming no cluster goes. It returns ErrNoRollout when there is
// no such GraphRollout, and otherwise what hold.Release returns.
func (c *Controller) Release(ctx context.Context, name, cluster string) error {
	return hold.Edit(ctx, c.Client, func(ctx context.Context) (*fgv1alpha1.GraphRollout, error) { return c.find(ctx, name) },
		func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error) {
			holds, err := hold.Release(ro, []string{cluster}, func(n string) bool { return c.heldBySelector(ro, n) })
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
