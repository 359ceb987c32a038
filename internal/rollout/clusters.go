package rollout

import (
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// describeClusters rewrites status.clusters after a step: every placed
// cluster, held ones included, with its wave, the revision serving it,
// the revision the rollout wants there, the revision it failed and why,
// and its hold. A cluster that waits gives the reason the wave in
// progress waits for it.
func describeClusters(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, waves map[string]int32, obs map[string]Observation, held map[string]string, pinned map[string]int64) {
	p := planOf(&fgv1alpha1.GraphRollout{Spec: spec, Status: *st})
	failed := clustersByName(st.Failed)
	waiting := clustersByName(st.HoldingBack)
	out := make([]fgv1alpha1.RolloutCluster, 0, len(waves))
	for _, name := range sortedKeys(waves) {
		c := fgv1alpha1.RolloutCluster{Name: name, Wave: waves[name], Revision: obs[name].Revision}
		f, isFailed := failed[name]
		reason, isHeld := held[name]
		switch {
		case isHeld:
			c.Held, c.HoldReason, c.Desired = true, reason, pinned[name]
		case isFailed && !allAtOnce(spec):
			c.Desired, c.FailedRevision, c.Message = f.Revision, st.TargetRevision, f.Message
		case p.decideOn(name, st.TargetRevision, c.Wave) == nil:
			c.Desired, c.Message = st.TargetRevision, waiting[name].Message
		case c.Revision > 0:
			c.Desired = c.Revision
		default:
			c.Desired = st.StableRevision
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		out = nil
	}
	st.Clusters = out
}
