package sdk

import (
	"context"
	"fmt"

	"github.com/fleetgraph/fleetgraph/sdk/hold"
)

// ErrNotHeld is returned by Release for a cluster no hold takes; match it
// with errors.Is.
var ErrNotHeld = hold.ErrNotHeld

// ErrHeldBySelector is returned by Release for a cluster a hold takes by
// its labels (spec.holds[].clusterSelector), which releasing by name
// cannot change: edit the GraphRollout instead. Match it with errors.Is.
var ErrHeldBySelector = hold.ErrHeldBySelector

// ErrUnknownCluster is returned by Hold for a cluster the GraphRollout
// does not place (its status.clusters, as of the hub's last look, does
// not list it), and by Release for such a cluster when no hold names it.
// Match it with errors.Is.
var ErrUnknownCluster = hold.ErrUnknownCluster

// Hold pins the named cluster to the revision it serves, in the
// GraphRollout named rolloutName or in the one that rules the graph so
// named: like kubectl, it adds a hold naming the cluster to spec.holds
// (field manager "fleetgraph-hold"; nothing when one already names it).
// Within Options.Rollouts.Resync the hub records the pin in
// status.clusters (held, desired) and the rollout goes on without the
// cluster. It returns ErrNoRollout when there is no such GraphRollout and
// ErrUnknownCluster when the rollout does not place the cluster.
func (h *Hub) Hold(ctx context.Context, rolloutName, cluster, reason string) error {
	return h.rollouts.hold(ctx, rolloutName, cluster, reason)
}

// Release takes the named cluster out of the holds of the GraphRollout
// named rolloutName (or of the one that rules the graph so named): the
// cluster catches up through the rollout's waves, at once if its wave
// has already taken the revision being rolled out. It returns
// ErrNoRollout, ErrHeldBySelector, ErrUnknownCluster for a cluster no hold
// names that the rollout does not place, or ErrNotHeld when no hold takes
// the cluster.
func (h *Hub) Release(ctx context.Context, rolloutName, cluster string) error {
	return h.rollouts.release(ctx, rolloutName, cluster)
}

func (r *rollouts) hold(ctx context.Context, rolloutName, cluster, reason string) error {
	if r.controller == nil {
		return fmt.Errorf("%w: rollouts are disabled", ErrNoRollout)
	}
	return r.controller.Hold(ctx, rolloutName, cluster, reason)
}

func (r *rollouts) release(ctx context.Context, rolloutName, cluster string) error {
	if r.controller == nil {
		return fmt.Errorf("%w: rollouts are disabled", ErrNoRollout)
	}
	return r.controller.Release(ctx, rolloutName, cluster)
}
