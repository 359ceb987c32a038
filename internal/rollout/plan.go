package rollout

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// Errors Decide returns; the gate retries on every one of them.
var (
	// ErrNotPlaced: the cluster is not selected to serve the graph.
	ErrNotPlaced = errors.New("cluster is not placed to serve the graph")
	// ErrHeldBack: the revision has not reached the cluster's wave yet (or
	// a rollback holds it back).
	ErrHeldBack = errors.New("the rollout holds the revision back from the cluster")
	// ErrNotLoaded: the hub has not read the GraphRollout objects yet.
	ErrNotLoaded = errors.New("rollouts not loaded yet")
)

// Cluster is an engaged cluster and its labels.
type Cluster struct {
	Name   string
	Labels map[string]string
}

// plan is a rollout as decisions need it: the spec, and the progress the
// status records.
type plan struct {
	spec   fgv1alpha1.GraphRolloutSpec
	target int64 // 0: not started (every revision serves everywhere placed)
	wave   int32
	// awaiting: wave waits for approval, none of its clusters may take
	// the target yet.
	awaiting bool
	// failed maps the clusters that failed the target, within their
	// wave's budget, to the revision they went back to.
	failed map[string]int64
	// started, for a wave with maxConcurrency, is the set of its clusters
	// that may take the target (nil: every one).
	started map[string]bool
	// back, while onFailure: Rollback takes the target back, is the
	// stable revision clusters of wave backFrom and later go back to.
	back     int64
	backFrom int32
	// held maps the clusters a hold pins to their pinned revision.
	held map[string]int64
	// refusedAbove, when set, is the target of a rollout whose health
	// condition does not compile: no later revision goes anywhere.
	refusedAbove int64
	// listed, when not nil, are the only clusters the rollout may place:
	// those its PlacementDecision lists (decision.go).
	listed map[string]bool
}

// selects reports whether sel matches lbls; nil matches everything, an
// invalid selector nothing.
func selects(sel *metav1.LabelSelector, lbls map[string]string) (bool, error) {
	if sel == nil {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	return s.Matches(labels.Set(lbls)), nil
}

// waveCount is how many waves spec has (at least one).
func waveCount(spec fgv1alpha1.GraphRolloutSpec) int32 {
	return int32(max(1, len(spec.Waves)))
}

// waveName names wave i of spec.
func waveName(spec fgv1alpha1.GraphRolloutSpec, i int32) string {
	if int(i) < len(spec.Waves) && spec.Waves[i].Name != "" {
		return spec.Waves[i].Name
	}
	return fmt.Sprintf("wave-%d", i+1)
}

// assign splits the placed clusters (already sorted by name) into waves:
// cluster name to wave index.
func assign(spec fgv1alpha1.GraphRolloutSpec, placed []string, labelsOf map[string]map[string]string) map[string]int32 {
	out := make(map[string]int32, len(placed))
	last := waveCount(spec) - 1
	for i, w := range spec.Waves {
		var free []string
		for _, name := range placed {
			if _, taken := out[name]; !taken {
				free = append(free, name)
			}
		}
		take := 0
		switch {
		case w.ClusterSelector != nil:
			for _, name := range free {
				if ok, _ := selects(w.ClusterSelector, labelsOf[name]); ok {
					out[name] = int32(i)
				}
			}
			continue
		case w.Clusters > 0:
			take = int(w.Clusters)
		case w.Percent > 0:
			take = (int(w.Percent)*len(placed) + 99) / 100
		}
		for _, name := range free[:min(take, len(free))] {
			out[name] = int32(i)
		}
	}
	for _, name := range placed {
		if _, taken := out[name]; !taken {
			out[name] = last
		}
	}
	return out
}

// placedClusters returns, sorted, the clusters spec's selector and the
// hook place, among those listed (nil: all), with each one's labels.
func placedClusters(graphName string, sel *metav1.LabelSelector, listed map[string]bool, hook PlacementFunc, clusters []Cluster) ([]string, map[string]map[string]string) {
	labelsOf := make(map[string]map[string]string, len(clusters))
	var placed []string
	for _, c := range clusters {
		if listed != nil && !listed[c.Name] {
			continue
		}
		if ok, _ := selects(sel, c.Labels); !ok {
			continue
		}
		if hook != nil && !hook(graphName, c.Name, c.Labels) {
			continue
		}
		placed = append(placed, c.Name)
		labelsOf[c.Name] = c.Labels
	}
	slices.Sort(placed)
	return placed, labelsOf
}

// decide is the decision for revision rev (numbered) of a graph on one
// cluster, given its rollout p (nil: none) and the cluster's wave (placed
// clusters only).
func (p *plan) decide(rev int64, wave int32) error {
	switch {
	case p == nil || p.target == 0:
		return nil
	case inWaves(p.spec):
		return p.decideInWaves(rev, wave)
	case p.spec.RollbackTo > 0:
		if rev == p.spec.RollbackTo {
			return nil
		}
		return fmt.Errorf("%w: rolled back to revision %d", ErrHeldBack, p.spec.RollbackTo)
	case rev > p.target:
		// A revision the controller has not picked up yet starts a new
		// rollout: its first wave may take it at once.
		if wave == 0 && !requiresApproval(p.spec, 0) && !limited(p.spec, 0) {
			return nil
		}
	case rev == p.target:
		if wave < p.wave || wave == p.wave && !p.awaiting {
			return nil
		}
	default:
		return nil // an older revision is what the runtime serves: nothing better
	}
	return fmt.Errorf("%w: revision %d waits for wave %q", ErrHeldBack, rev, waveName(p.spec, wave))
}

// decideOn is decide for the named cluster: one that failed the target
// does not take it again.
func (p *plan) decideOn(cluster string, rev int64, wave int32) error {
	if rev == 0 {
		return p.decideUnnumbered(cluster, wave) // unnumbered.go
	}
	if err, held := p.decideHeld(cluster, rev); held {
		return err
	}
	if err := p.decideRefused(rev); err != nil {
		return err
	}
	if p != nil && !allAtOnce(p.spec) && rev == p.target {
		if back, failed := p.failed[cluster]; failed && !inWaves(p.spec) {
			return fmt.Errorf("%w: the cluster failed revision %d and serves revision %d", ErrHeldBack, rev, back)
		}
		if p.back > 0 && wave >= p.backFrom {
			return fmt.Errorf("%w: revision %d is rolled back to revision %d", ErrHeldBack, rev, p.back)
		}
		if wave == p.wave && !p.admitted(cluster) {
			return fmt.Errorf("%w: revision %d waits for its turn in wave %q (maxConcurrency %s)",
				ErrHeldBack, rev, waveName(p.spec, wave), p.spec.Waves[wave].MaxConcurrency.String())
		}
	}
	return p.decide(rev, wave)
}

// planSpec is p's spec; a missing rollout places everywhere in one wave.
func planSpec(p *plan) fgv1alpha1.GraphRolloutSpec {
	if p == nil {
		return fgv1alpha1.GraphRolloutSpec{}
	}
	return p.spec
}
