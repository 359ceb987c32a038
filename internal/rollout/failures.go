package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// budget is how many clusters of wave w may fail: its maxFailures of the
// wave's size (a percent rounds down). An invalid value allows none.
func budget(spec fgv1alpha1.GraphRolloutSpec, w int32, waves map[string]int32) int {
	if int(w) >= len(spec.Waves) || spec.Waves[w].MaxFailures == nil {
		return 0
	}
	size := 0
	for _, cw := range waves {
		if cw == w {
			size++
		}
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(spec.Waves[w].MaxFailures, size, false)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// withoutFailed drops the clusters listed as failed from bad.
func withoutFailed(bad, failed []fgv1alpha1.RolloutCluster) []fgv1alpha1.RolloutCluster {
	if len(failed) == 0 {
		return bad
	}
	out := bad[:0:0]
	for _, b := range bad {
		if !listed(failed, b.Name) {
			out = append(out, b)
		}
	}
	return out
}

func listed(clusters []fgv1alpha1.RolloutCluster, name string) bool {
	for _, c := range clusters {
		if c.Name == name {
			return true
		}
	}
	return false
}

// failWithinBudget lists bad, the clusters of the wave in progress still
// unhealthy at its deadline, as failed if the wave's maxFailures allows
// them all; it reports whether it did. A failed cluster goes back to the
// stable revision.
func failWithinBudget(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, bad []fgv1alpha1.RolloutCluster, waves map[string]int32) ([]event, bool) {
	used := 0
	for _, f := range st.Failed {
		if f.Wave == st.Wave {
			used++
		}
	}
	allowed := budget(spec, st.Wave, waves)
	if used+len(bad) > allowed {
		return nil, false
	}
	evs := make([]event, 0, len(bad))
	for _, b := range bad {
		keeps, goes := failedKeeps(st), "goes back to"
		if manual(st) {
			goes = "keeps"
		}
		st.Failed = append(st.Failed, fgv1alpha1.RolloutCluster{Name: b.Name, Wave: st.Wave, Revision: keeps, Message: b.Message})
		evs = append(evs, event{"Warning", "ClusterFailed", fmt.Sprintf(
			"cluster %q failed wave %q (%d of %d failures allowed) and %s revision %d: %s",
			b.Name, waveName(spec, st.Wave), used+len(evs)+1, allowed, goes, keeps, b.Message)})
	}
	return evs, true
}

// failedBack maps the clusters that failed the status's target to the
// revision each went back to.
func failedBack(st fgv1alpha1.GraphRolloutStatus) map[string]int64 {
	if len(st.Failed) == 0 {
		return nil
	}
	out := make(map[string]int64, len(st.Failed))
	for _, f := range st.Failed {
		out[f.Name] = f.Revision
	}
	return out
}

// FallBackTo is the revision the named cluster goes back to after it
// failed its wave of the revision being rolled out, an automatic
// rollback took that revision back from it, or the revision a hold pins
// it at (0: none).
func (p *Planner) FallBackTo(graphName, cluster string) int64 {
	if pin := p.pinnedTo(graphName, cluster); pin > 0 {
		return pin // a held cluster goes back to its pin
	}
	p.mu.Lock()
	pl := p.plans[graphName]
	p.mu.Unlock()
	if pl == nil || pl.spec.RollbackTo > 0 {
		return 0
	}
	if back, failed := pl.failed[cluster]; failed {
		return back
	}
	return p.rolledBackTo(pl, graphName, cluster)
}
