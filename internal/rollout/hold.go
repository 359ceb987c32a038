package rollout

import (
	"fmt"
	"slices"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// Holds (spec.holds) pin clusters to the revision each serves when the
// hold first takes it. The pin is recorded in the status (status.clusters,
// held with desired), so a restarted hub keeps it, and the Planner reads
// it back from there: a held cluster takes no revision but its pin,
// whatever the rollout or a rollback says. The rollout itself runs as if
// the held clusters were not there (step sees the waves without them):
// they count neither toward a wave's health nor toward its maxFailures,
// and a wave's membership does not change, so a released cluster catches
// up with its own wave.

// maxHoldReason bounds a hold's reason quoted in status and events (the
// CRD's own bound).
const maxHoldReason = 256

// heldBy returns, for each placed cluster a hold of spec takes, the
// reason of the first hold that takes it.
func heldBy(spec fgv1alpha1.GraphRolloutSpec, placed []string, labelsOf map[string]map[string]string) map[string]string {
	if len(spec.Holds) == 0 {
		return nil
	}
	// First hold by name of each cluster, so that a long list of names is
	// read once, not once per placed cluster.
	byName := map[string]int{}
	for i, h := range spec.Holds {
		if h.ClusterSelector != nil {
			continue
		}
		for _, name := range h.Clusters {
			if _, seen := byName[name]; !seen {
				byName[name] = i
			}
		}
	}
	out := map[string]string{}
	for _, name := range placed {
		first, named := byName[name]
		for i, h := range spec.Holds {
			if named && i == first || h.ClusterSelector != nil && holds(h, name, labelsOf[name]) {
				out[name] = truncateAt(h.Reason, maxHoldReason)
				break
			}
		}
	}
	return out
}

// holds reports whether h takes the named cluster, with its labels. A
// hold with neither names nor a selector takes none.
func holds(h fgv1alpha1.Hold, name string, lbls map[string]string) bool {
	if h.ClusterSelector != nil {
		ok, _ := selects(h.ClusterSelector, lbls)
		return ok
	}
	return slices.Contains(h.Clusters, name)
}

// pinRevisions is the revision each held cluster is pinned at: the pin the
// status already records, else the revision the cluster serves now, else
// the one the status last saw it serve, else the stable revision.
func pinRevisions(st *fgv1alpha1.GraphRolloutStatus, held map[string]string, obs map[string]Observation) map[string]int64 {
	if len(held) == 0 {
		return nil
	}
	prev := clustersByName(st.Clusters)
	out := make(map[string]int64, len(held))
	for name := range held {
		p, seen := prev[name]
		switch {
		case seen && p.Held && p.Desired > 0:
			out[name] = p.Desired
		case obs[name].Revision > 0:
			out[name] = obs[name].Revision
		case seen && p.Revision > 0:
			out[name] = p.Revision
		default:
			out[name] = st.StableRevision
		}
	}
	return out
}

// withoutHeld is waves without the held clusters: what the rollout moves.
func withoutHeld(waves map[string]int32, held map[string]string) map[string]int32 {
	if len(held) == 0 {
		return waves
	}
	out := make(map[string]int32, len(waves))
	for name, w := range waves {
		if _, ok := held[name]; !ok {
			out[name] = w
		}
	}
	return out
}

// heldPins maps the clusters the status records as held to their pins.
func heldPins(st fgv1alpha1.GraphRolloutStatus) map[string]int64 {
	var out map[string]int64
	for _, c := range st.Clusters {
		if c.Held {
			if out == nil {
				out = map[string]int64{}
			}
			out[c.Name] = c.Desired
		}
	}
	return out
}

// decideHeld is the decision for revision rev on a held cluster; held is
// false when no hold pins the cluster.
func (p *plan) decideHeld(cluster string, rev int64) (err error, held bool) {
	if p == nil {
		return nil, false
	}
	pin, ok := p.held[cluster]
	if !ok {
		return nil, false
	}
	if rev == pin {
		return nil, true
	}
	return fmt.Errorf("%w: the cluster is held at revision %d", ErrHeldBack, pin), true
}

// pinnedTo is the revision a hold pins the named cluster at (0: none).
func (p *Planner) pinnedTo(graphName, cluster string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl := p.plans[graphName]; pl != nil {
		return pl.held[cluster]
	}
	return 0
}

// holdEvents says which clusters a hold took or let go since the status
// before.
func holdEvents(before []fgv1alpha1.RolloutCluster, held map[string]string, pinned map[string]int64) []event {
	prev := clustersByName(before)
	var evs []event
	for _, name := range sortedKeys(held) {
		if prev[name].Held {
			continue
		}
		note := fmt.Sprintf("cluster %q is held at revision %d", name, pinned[name])
		if held[name] != "" {
			note += ": " + held[name]
		}
		evs = append(evs, event{"Normal", "ClusterHeld", note})
	}
	for _, c := range before {
		if _, still := held[c.Name]; c.Held && !still {
			evs = append(evs, event{"Normal", "ClusterReleased", fmt.Sprintf("cluster %q, held at revision %d, is released to the rollout", c.Name, c.Desired)})
		}
	}
	return evs
}

func clustersByName(cs []fgv1alpha1.RolloutCluster) map[string]fgv1alpha1.RolloutCluster {
	out := make(map[string]fgv1alpha1.RolloutCluster, len(cs))
	for _, c := range cs {
		out[c.Name] = c
	}
	return out
}
