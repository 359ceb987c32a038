package rollout

import (
	"fmt"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// With hub replicas, each replica engages some of the clusters and steps
// every rollout from what it sees; they share the rollout's status. A
// replica that wrote only its own clusters would take the others' out of
// status.clusters at every write, and judge a wave healthy on its own
// clusters alone. So each replica also carries the clusters other
// replicas serve (Hooks.Others), as the stored status last described
// them: they stay listed, and one of them counts in its wave as its own
// replica last judged it (unhealthy while the status lists it holding
// the wave back, or once that replica stopped). Only the replica that
// serves a cluster observes it and changes what the status says of it.
// Until a replica has read the others' records, it keeps every cluster
// the status lists that it does not place: a cluster dropped from the
// status would lose its hold's pin and its failure with it.

// Foreign is a cluster another hub replica serves.
type Foreign struct {
	// Replica names the replica.
	Replica string
	// Gone reports that the replica stopped and no other has taken the
	// cluster over yet.
	Gone bool
}

// unknownReplica names the replica of a cluster this hub does not place
// before it knows which replica serves it.
const unknownReplica = "(not known yet)"

// replicaGone is why a cluster whose replica stopped is not healthy.
func replicaGone(replica string) string {
	return fmt.Sprintf("hub replica %s, which served the cluster, stopped; no other replica has taken it over yet", replica)
}

// foreign adds to waves and obs the clusters other replicas serve that
// the stored status (before) lists and this hub does not place, but the
// held ones, which count in no wave; it returns the stored entries of all
// of them, to be listed as they are.
func (c *Controller) foreign(ro *fgv1alpha1.GraphRollout, before *fgv1alpha1.GraphRolloutStatus, waves map[string]int32, obs map[string]Observation) map[string]fgv1alpha1.RolloutCluster {
	if c.Hooks.Others == nil {
		return nil
	}
	others, known := c.Hooks.Others(ro.Spec.Graph)
	if known && len(others) == 0 {
		return nil
	}
	waiting := clustersByName(before.HoldingBack)
	kept := map[string]fgv1alpha1.RolloutCluster{}
	for _, stored := range before.Clusters {
		f, theirs := others[stored.Name]
		if !known {
			// Whose it is is not known yet: dropping it would drop its
			// pin and its failure with it.
			f, theirs = Foreign{Replica: unknownReplica}, true
		}
		if _, ours := waves[stored.Name]; !theirs || ours {
			continue
		}
		why := waiting[stored.Name].Message
		if why == "" && stored.FailedRevision == 0 {
			why = stored.Message // past holdingBack's bound, its why is here
		}
		if f.Gone {
			why = replicaGone(f.Replica)
			stored.Message = why
		}
		kept[stored.Name] = stored
		if stored.Held {
			continue
		}
		waves[stored.Name] = stored.Wave
		obs[stored.Name] = Observation{Revision: stored.Revision, Established: true, Replica: f.Replica, Unhealthy: why}
	}
	return kept
}
