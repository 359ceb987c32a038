package replicas

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/shard"
)

// A replica's record outlives the replica: it counts until its TTL runs
// out, which is longer than the others take to take its clusters over. In
// between, the record's clusters are listed as their dead replica last
// saw them, which would say nothing of the replica's death. So Merged asks
// the peer Leases of the sharded coordinator (in Namespace too) who is
// alive: the clusters of a record whose replica's Lease expired are
// marked hub.ReasonReplicaGone until another replica lists them. Without
// any peer Lease (replicas not run by internal/shard's registry there)
// every record's replica counts as alive.

// AnnotationPeer, on a record, is its replica's ID among the peers (the
// holder of its peer Lease).
const AnnotationPeer = "fleetgraph.dev/peer"

// livenessEvery is how long the peers read are trusted.
const livenessEvery = time.Second

// liveness is who was alive at the last read of the peer Leases.
type liveness struct {
	read  time.Time
	known bool // some peer Lease was found
	live  map[string]bool
}

// gone reports whether the record's replica is known to be dead: its
// peer Lease expired or is gone while others' are there.
func (l liveness) gone(cm *corev1.ConfigMap) bool {
	peer := cm.Annotations[AnnotationPeer]
	return l.known && peer != "" && !l.live[peer]
}

// readLiveness reads who is alive, at most every livenessEvery. A failed read
// keeps the last answer.
func (r *Status) readLiveness(ctx context.Context, now time.Time) liveness {
	r.mu.Lock()
	last := r.alive
	r.mu.Unlock()
	if now.Sub(last.read) < livenessEvery {
		return last
	}
	live, known, err := shard.LivePeers(ctx, r.Client, r.Namespace)
	if err != nil {
		return last
	}
	l := liveness{read: now, known: known, live: live}
	r.mu.Lock()
	r.alive = l
	r.mu.Unlock()
	return l
}

// orphaned marks the clusters of a dead replica's record: the cluster
// waits for another replica, and what the record says is that replica's
// last word.
func orphaned(cm *corev1.ConfigMap, clusters []hub.ClusterStatus) []hub.ClusterStatus {
	replica := cm.Labels[LabelReplica]
	for i := range clusters {
		c := &clusters[i]
		last := c.Why
		if last == "" {
			last = fmt.Sprintf("CRD %s, %d of %d instances ready", c.CRD, c.ReadyInstances, c.Instances)
		}
		c.Reason = hub.ReasonReplicaGone
		c.Why = fmt.Sprintf("hub replica %s, which served the cluster, stopped (its Lease expired); no other replica has taken the cluster over yet. As it last saw it: %s", replica, last)
	}
	return clusters
}

// Foreign is a cluster another replica serves, as its record says.
type Foreign struct {
	// Replica is the replica's name (a label value).
	Replica string
	// Gone reports that the replica stopped and no other has taken the
	// cluster over yet.
	Gone bool
}

// Others returns, for the named graph, the clusters the other replicas'
// live records listed at the last Merged, each with its replica, and
// whether there was one: until the first, this replica does not know
// which clusters the others serve. A lone hub knows: none.
func (r *Status) Others(graph string) (map[string]Foreign, bool) {
	if r.Lone {
		return nil, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	others, known := r.others[graph]
	return others, known
}

// setOthers records the clusters of merged that this replica does not
// serve (own).
func (r *Status) setOthers(graph string, own []hub.ClusterStatus, merged []hub.ClusterStatus, from map[string]string) {
	mine := make(map[string]bool, len(own))
	for _, c := range own {
		if !c.HandingOver {
			mine[c.Cluster] = true
		}
	}
	out := map[string]Foreign{}
	for _, c := range merged {
		if mine[c.Cluster] || from[c.Cluster] == "" {
			continue
		}
		out[c.Cluster] = Foreign{Replica: from[c.Cluster], Gone: c.Reason == hub.ReasonReplicaGone}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.others == nil {
		r.others = map[string]map[string]Foreign{}
	}
	r.others[graph] = out
}

// ownLabel is this replica's name as records label it.
func (r *Status) ownLabel() string { return contract.LabelValue(r.Replica) }
