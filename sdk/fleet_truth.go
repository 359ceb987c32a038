package sdk

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// The fleet's state per graph and cluster is computed here and nowhere
// else (clusterStatus): FleetStatus returns it; the RGD's status
// summarises it (internal/rgd, Summary), merged with the other replicas'
// records when there are several (sharding.go); the replicas' records,
// which `fleetgraph status` reads, carry it whole; and the metrics are
// set from it (fleet_metrics.go). Per cluster it says how many instances
// there are, ready and in ERROR, which revision serves the cluster, which
// one should (DesiredRevision, as the graph's rollout decides), and why
// either is not the latest (Reason and Why).

// clusterStatus is the named graph's state on every cluster this Hub
// serves: the fan-out's CRD states, the instance counts, the revisions
// served and desired and why they differ; for a hub graph also its
// instances on the hub and the clusters they write to (Targets).
func (h *Hub) clusterStatus(name string) GraphStatus {
	st := h.observed(name)
	if h.hubGraphStatus(name, &st) {
		return st
	}
	d := h.decisions(name)
	st.LatestRevision = d.latest
	for i := range st.Clusters {
		d.explain(&st.Clusters[i])
	}
	return st
}

// observed is the named graph's CRD state per cluster with the instance
// counts and the version serving each cluster: what the hub's own loops
// (servability, rollouts) read, every tick, for every graph, without the
// decisions clusterStatus adds.
func (h *Hub) observed(name string) GraphStatus {
	st := h.fanOut.Status(name)
	h.countInstances(name, &st)
	h.pull.addStatus(name, &st) // pull.go
	return st
}

// countInstances fills in the instance fields of st's clusters from the
// spoke runtime.
func (h *Hub) countInstances(name string, st *GraphStatus) {
	served := h.runtime.Served(name)
	counts := h.runtime.Counts(name)
	for i := range st.Clusters {
		cs := &st.Clusters[i]
		c := counts[multicluster.ClusterName(cs.Cluster)]
		cs.Instances, cs.ReadyInstances, cs.ErrorInstances, cs.Uncounted = c.Total, c.Ready, c.InError, !c.Counted
		if cs.CRD == hub.CRDMissing {
			// The instances went, or are going, with the CRD.
			cs.Instances, cs.ReadyInstances, cs.ErrorInstances, cs.Uncounted = 0, 0, 0, true
		}
		if v, ok := served[multicluster.ClusterName(cs.Cluster)]; ok {
			cs.Serving, cs.ServedGeneration, cs.ServedRevision = true, v.Graph.Generation, v.Revision
		}
	}
}

// decisions is what decides which revision each cluster of a graph
// should serve: the revision registered last, the one the runtime offers
// (a rollback's), and the graph's rollout as of its last look.
type decisions struct {
	h       *Hub
	graph   string
	latest  int64 // the newest spec's revision
	offered int64 // what the runtime offers every cluster
	rollout *fgv1alpha1.GraphRolloutStatus
	placed  map[string]fgv1alpha1.RolloutCluster
}

func (h *Hub) decisions(name string) decisions {
	d := decisions{h: h, graph: name, latest: h.rollouts.registeredRevision(name), offered: h.runtime.Latest(name).Revision}
	if d.offered == 0 {
		d.offered = d.latest
	}
	if ro, ok := h.rollouts.status(name); ok {
		d.rollout = &ro
		d.placed = make(map[string]fgv1alpha1.RolloutCluster, len(ro.Clusters))
		for _, c := range ro.Clusters {
			d.placed[c.Name] = c
		}
	}
	return d
}

// explain fills in the revision cs's cluster should serve and why it
// does not, or why that is not the latest revision. What stands in the
// way (the cluster cannot be reached, or refuses the revision, or its
// gate has not passed yet) comes before what was decided (a hold, a
// rollback, a failure within the wave's budget, a rollout on its way).
func (d decisions) explain(cs *ClusterStatus) {
	rc, listed := d.placed[cs.Cluster]
	desired := d.offered
	if listed && rc.Desired > 0 {
		desired = rc.Desired
	}
	cs.DesiredRevision = desired
	switch {
	case cs.CRD == hub.CRDUnreachable:
		cs.Reason, cs.Why = hub.ReasonUnreachable, "the cluster does not answer: "+cs.Message
	case cs.CRD == hub.CRDNotEngaged:
		cs.Reason, cs.Why = hub.ReasonUnreachable, "the cluster is not engaged: "+cs.Message
	case !cs.Serving || cs.ServedRevision != desired:
		cs.Reason, cs.Why = notServed(cs, desired)
	case desired == d.latest || d.latest == 0:
		cs.Reason, cs.Why = "", ""
	default:
		cs.Reason, cs.Why = d.decided(cs, rc, listed)
	}
}

// notServed says why the cluster does not serve the revision it should.
func notServed(cs *ClusterStatus, desired int64) (hub.Reason, string) {
	var b strings.Builder
	if cs.Serving {
		fmt.Fprintf(&b, "serving %s; ", revisionWord(cs.ServedRevision))
	}
	reason := hub.ReasonGate
	switch cs.CRD {
	case hub.CRDConflict, hub.CRDIncompatible:
		reason = hub.ReasonIncompatible
		fmt.Fprintf(&b, "%s cannot be served", revisionWord(desired))
	case hub.CRDEstablished:
		fmt.Fprintf(&b, "%s not served yet: its CRD is established, the switch is under way", revisionWord(desired))
		return reason, b.String()
	default:
		fmt.Fprintf(&b, "%s not served yet", revisionWord(desired))
	}
	fmt.Fprintf(&b, ": CRD %s", cs.CRD)
	if cs.Revision != 0 && cs.Revision != desired {
		fmt.Fprintf(&b, " (of revision %d)", cs.Revision)
	}
	if cs.Message != "" {
		b.WriteString(": " + cs.Message)
	}
	return reason, b.String()
}

// decided says why the cluster, which serves what it should, does not
// serve the latest revision: a decision, not a problem.
func (d decisions) decided(cs *ClusterStatus, rc fgv1alpha1.RolloutCluster, listed bool) (hub.Reason, string) {
	served := revisionWord(cs.ServedRevision)
	ro := d.rollout
	switch {
	case listed && rc.Held:
		why := fmt.Sprintf("held at revision %d", rc.Desired)
		if rc.HoldReason != "" {
			why += ": " + rc.HoldReason
		}
		return hub.ReasonHeld, fmt.Sprintf("serving %s (%s)", served, why)
	case listed && rc.FailedRevision > 0:
		return hub.ReasonFailed, fmt.Sprintf("serving %s (revision %d failed here: %s)", served, rc.FailedRevision, rc.Message)
	case ro != nil && (ro.Phase == fgv1alpha1.RolloutRolledBack || ro.Phase == fgv1alpha1.RolloutRollingBack):
		if why := ro.RollbackReason; why != "" && why != fgv1alpha1.RollbackReasonManual {
			return hub.ReasonRolledBack, fmt.Sprintf("serving %s (revision %d rolled back: %s)", served, d.latest, why)
		}
		return hub.ReasonRolledBack, fmt.Sprintf("serving %s (revision %d rolled back by hand: spec.rollbackTo)", served, d.latest)
	}
	why := "the rollout has not reached the cluster yet"
	if err := d.h.planner.Decide(d.graph, cs.Cluster, d.latest); err != nil {
		why = err.Error()
	}
	if ro != nil && ro.Phase == fgv1alpha1.RolloutFailed {
		why += fmt.Sprintf(" (the rollout failed: %s)", ro.Message)
	}
	return hub.ReasonRollingOut, fmt.Sprintf("serving %s; revision %d waits: %s", served, d.latest, why)
}

// revisionWord names a revision for people.
func revisionWord(rev int64) string {
	if rev == 0 {
		return "an unnumbered revision"
	}
	return fmt.Sprintf("revision %d", rev)
}

// hubGraphStatusTimeout bounds the read of a hub graph's instances from
// the hub's cache (it waits only while that cache syncs).
const hubGraphStatusTimeout = 5 * time.Second

// hubGraphStatus fills st for a hub graph: its CRD and instances are on
// the hub, which counts them, and Targets lists every cluster they write
// to with its reachability. It reports false for a graph that is not a
// hub graph.
func (h *Hub) hubGraphStatus(name string, st *hub.GraphStatus) bool {
	if h.hubGraphs == nil || !h.hubGraphs.Serves(name) {
		return false
	}
	st.LatestRevision = h.rollouts.registeredRevision(name)
	ctx, cancel := context.WithTimeout(h.ctx, hubGraphStatusTimeout)
	defer cancel()
	t, err := h.hubGraphs.Tally(ctx, name)
	if err != nil {
		h.opts.Logger.V(1).Info("reading a hub graph's instances for its status", "graph", name, "error", err.Error())
		return true
	}
	st.Instances, st.ReadyInstances, st.ErrorInstances = t.Instances, t.Ready, t.InError
	engaged := map[string]bool{"": true}
	for _, n := range (hubClusters{h}).Names() {
		engaged[n] = true
	}
	st.Targets = make([]hub.TargetStatus, 0, len(t.Uses))
	for _, u := range t.Uses {
		ts := hub.TargetStatus{
			Cluster: u.Cluster, Instances: u.Instances, ReadyInstances: u.Ready, ErrorInstances: u.InError,
			Deleting: u.Deleting, Engaged: engaged[u.Cluster],
		}
		if u.Cluster != "" {
			ts.Unreachable, _ = h.fanOut.Unreachable(u.Cluster)
		}
		st.Targets = append(st.Targets, ts)
	}
	return true
}

// Instance counts change with every informer event; the RGD's status and
// the replica's record follow them through countChanges: the first change
// after a quiet spell is told countsDelay later (a burst of events is
// told once), and then at most once every countsEvery per graph.
const (
	countsDelay = 100 * time.Millisecond
	countsEvery = time.Second
)

// countChanges tells notify of graphs whose instance counts changed, at
// most once every countsEvery each. Safe for concurrent use; changed
// never blocks.
type countChanges struct {
	notify func(graph string)

	mu   sync.Mutex
	due  map[string]bool      // graphs whose telling is scheduled
	last map[string]time.Time // graphs told less than countsEvery ago
}

func newCountChanges(notify func(string)) *countChanges {
	return &countChanges{notify: notify, due: map[string]bool{}, last: map[string]time.Time{}}
}

// changed schedules telling notify of graph, unless it is scheduled.
func (c *countChanges) changed(graph string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.due[graph] {
		return
	}
	wait := countsDelay
	if last, ok := c.last[graph]; ok {
		wait = max(wait, countsEvery-time.Since(last))
	}
	c.due[graph] = true
	time.AfterFunc(wait, func() { c.tell(graph) })
}

// tell tells notify of graph, and forgets when it did once countsEvery
// has passed, so that a graph that is gone leaves nothing behind.
func (c *countChanges) tell(graph string) {
	now := time.Now()
	c.mu.Lock()
	delete(c.due, graph)
	c.last[graph] = now
	c.mu.Unlock()
	c.notify(graph)
	time.AfterFunc(countsEvery, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.last[graph].Equal(now) {
			delete(c.last, graph)
		}
	})
}
