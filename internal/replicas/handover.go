package replicas

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// A cluster changes hands between replicas in two steps: the replica that
// served it lets go (its view no longer lists it), and only then does the
// new owner take the cluster's fence and engage it. In between, seconds on
// a loaded hub, no replica's view lists the cluster, and a union of views
// would drop it from the RGD's fleet status, then bring it back. So a
// replica keeps publishing a cluster it let go, marked HandingOver with the
// last state it saw, until another replica's live record lists the cluster
// as its own, or for one TTL at most (a cluster that left the fleet goes
// after that).

// handover is a cluster this replica let go of, still published.
type handover struct {
	last  hub.ClusterStatus
	since time.Time
}

// withHandovers returns own plus the clusters this replica served at its
// previous call but no longer does, each marked HandingOver, until taken
// over (see takenOver) or for one TTL. Callers hold no lock.
func (r *Status) withHandovers(own hub.GraphStatus, now time.Time) hub.GraphStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handing == nil {
		r.handing, r.lastOwn = map[string]map[string]handover{}, map[string]map[string]hub.ClusterStatus{}
	}
	current := make(map[string]hub.ClusterStatus, len(own.Clusters))
	for _, c := range own.Clusters {
		current[c.Cluster] = c
	}
	handing := r.handing[own.Graph]
	for name, c := range r.lastOwn[own.Graph] {
		if _, still := current[name]; !still && handing[name].since.IsZero() {
			if handing == nil {
				handing = map[string]handover{}
			}
			c.HandingOver = true
			handing[name] = handover{last: c, since: now}
		}
	}
	r.lastOwn[own.Graph] = current
	out := own
	out.Clusters = append(make([]hub.ClusterStatus, 0, len(own.Clusters)+len(handing)), own.Clusters...)
	for name, h := range handing {
		_, back := current[name]
		if back || now.Sub(h.since) >= r.TTL {
			delete(handing, name)
			continue
		}
		out.Clusters = append(out.Clusters, h.last)
	}
	r.setHanding(own.Graph, handing)
	return out
}

// takenOver forgets the clusters being handed over that another replica's
// live record now lists as its own.
func (r *Status) takenOver(graph string, records []corev1.ConfigMap, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	handing := r.handing[graph]
	if len(handing) == 0 {
		return
	}
	for _, c := range r.othersServing(records, now) {
		delete(handing, c)
	}
	r.setHanding(graph, handing)
}

// othersServing lists the clusters other replicas' live records serve
// (not merely hand over).
func (r *Status) othersServing(records []corev1.ConfigMap, now time.Time) []string {
	var out []string
	for i := range records {
		cm := &records[i]
		if cm.Labels[LabelReplica] == contract.LabelValue(r.Replica) || isExpired(cm, r.TTL, now) {
			continue
		}
		for _, c := range decodeRecord(cm) {
			if !c.HandingOver {
				out = append(out, c.Cluster)
			}
		}
	}
	return out
}

// setHanding stores one graph's hand-overs; r.mu is held.
func (r *Status) setHanding(graph string, handing map[string]handover) {
	if len(handing) == 0 {
		delete(r.handing, graph)
		return
	}
	r.handing[graph] = handing
}
