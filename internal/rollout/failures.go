package rollout

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// A wave's failure budget (maxFailures) is how many of its clusters may
// fail, be still unhealthy at the progress deadline, without failing the
// wave. A wave needs at least one healthy cluster: the budget of a wave
// of n clusters (held ones do not count) is at most n-1, so a wave whose
// every cluster failed fails, whatever its maxFailures says, and is never
// healthy nor complete. A maxFailures as large as its wave is reported
// (condition FailureBudget False, event FailureBudgetCoversWave): the
// rollout does not do what it seems to say.

// budget is how many clusters of wave w may fail: its maxFailures of the
// wave's size (a percent rounds down), at most the size less one. An
// invalid value allows none.
func budget(spec fgv1alpha1.GraphRolloutSpec, w int32, waves map[string]int32) int {
	n, size := declaredBudget(spec, w, waves)
	return max(0, min(n, size-1))
}

// declaredBudget is wave w's maxFailures as written, scaled to its size,
// and its size.
func declaredBudget(spec fgv1alpha1.GraphRolloutSpec, w int32, waves map[string]int32) (int, int) {
	size := waveSize(w, waves)
	if int(w) >= len(spec.Waves) || spec.Waves[w].MaxFailures == nil {
		return 0, size
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(spec.Waves[w].MaxFailures, size, false)
	if err != nil || n < 0 {
		return 0, size
	}
	return n, size
}

// waveSize is how many of waves are in wave w.
func waveSize(w int32, waves map[string]int32) int {
	size := 0
	for _, cw := range waves {
		if cw == w {
			size++
		}
	}
	return size
}

// ConditionFailureBudget is the GraphRollout status condition that says
// whether every wave's maxFailures leaves it a healthy cluster.
const ConditionFailureBudget = "FailureBudget"

// checkBudgets sets the FailureBudget condition from the waves as placed
// now, and returns the event to record when a budget starts covering its
// wave.
func checkBudgets(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, waves map[string]int32) []event {
	var covering []string
	for i, w := range spec.Waves {
		if w.MaxFailures == nil {
			continue
		}
		n, size := declaredBudget(spec, int32(i), waves)
		if size > 0 && n >= size {
			covering = append(covering, fmt.Sprintf("wave %q allows %d of its %d %s to fail", waveName(spec, int32(i)), n, size, plural(size, "cluster")))
		}
	}
	if len(covering) == 0 {
		if meta.FindStatusCondition(st.Conditions, ConditionFailureBudget) != nil {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionFailureBudget, Status: metav1.ConditionTrue,
				Reason: "LeavesHealthyClusters", Message: "every wave's maxFailures leaves it at least one healthy cluster", ObservedGeneration: st.ObservedGeneration})
		}
		return nil
	}
	msg := strings.Join(covering, "; ") + ": a wave needs at least one healthy cluster, so at most all but one may fail; a wave whose every cluster fails fails the rollout"
	prev := meta.FindStatusCondition(st.Conditions, ConditionFailureBudget)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionFailureBudget, Status: metav1.ConditionFalse,
		Reason: "CoversWave", Message: msg, ObservedGeneration: st.ObservedGeneration})
	if prev != nil && prev.Status == metav1.ConditionFalse && prev.Message == msg {
		return nil
	}
	return []event{{"Warning", "FailureBudgetCoversWave", msg}}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// failedIn lists the clusters of st.Failed that failed wave w.
func failedIn(st *fgv1alpha1.GraphRolloutStatus, w int32) []fgv1alpha1.RolloutCluster {
	var out []fgv1alpha1.RolloutCluster
	for _, f := range st.Failed {
		if f.Wave == w {
			out = append(out, f)
		}
	}
	return out
}

// failedNames says which clusters failed, with the revision each went back
// to and why.
func failedNames(failed []fgv1alpha1.RolloutCluster) string {
	parts := make([]string, 0, min(len(failed), maxNamed))
	for _, f := range failed[:min(len(failed), maxNamed)] {
		parts = append(parts, fmt.Sprintf("%s (serves revision %d: %s)", f.Name, f.Revision, f.Message))
	}
	return strings.Join(parts, "; ") + more(len(failed))
}

// withoutFailed drops the clusters listed as failed from bad.
func withoutFailed(bad, failed []fgv1alpha1.RolloutCluster) []fgv1alpha1.RolloutCluster {
	if len(failed) == 0 {
		return bad
	}
	isFailed := clustersByName(failed)
	out := bad[:0:0]
	for _, b := range bad {
		if _, ok := isFailed[b.Name]; !ok {
			out = append(out, b)
		}
	}
	return out
}

// failWithinBudget lists bad, the clusters of the wave in progress still
// unhealthy at its deadline, as failed if the wave's maxFailures allows
// them all and the status can record them (recordsFull); it reports
// whether it did. A failed cluster goes back to the stable revision.
func failWithinBudget(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, bad []fgv1alpha1.RolloutCluster, waves map[string]int32) ([]event, bool) {
	used := 0
	for _, f := range st.Failed {
		if f.Wave == st.Wave {
			used++
		}
	}
	allowed := budget(spec, st.Wave, waves)
	if used+len(bad) > allowed || recordsFull(st, bad) {
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

// recordsFull reports whether listing bad as failed would pass
// MaxFailedClusters.
func recordsFull(st *fgv1alpha1.GraphRolloutStatus, bad []fgv1alpha1.RolloutCluster) bool {
	return len(st.Failed)+len(bad) > fgv1alpha1.MaxFailedClusters
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

// FallBackFrom is the revision the hub's fallback may serve on the named
// cluster, whose CRD was applied from revision found (0: none). The CRD's
// revision is what the cluster served last, not what its rollout allows
// now: a cluster that failed a revision, was rolled back from it or is
// held elsewhere may still carry its label (the fallback does not
// re-apply the CRD, and a restarted hub may see the revision it failed
// offered under another number, or unnumbered). Where the Planner refuses
// found and names a revision to go back to, that one serves.
func (p *Planner) FallBackFrom(graphName, cluster string, found int64) int64 {
	back := p.FallBackTo(graphName, cluster)
	if found == 0 || back == 0 || back == found || p.Decide(graphName, cluster, found) == nil {
		return found
	}
	return back
}
