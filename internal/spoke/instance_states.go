package spoke

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// InstanceStates is the states the member serving the cluster recorded
// (states.go): what that version's reconciles computed, written or not;
// nil when no member serves the cluster. A rollout's health gate reads
// it.
func (rt *Runtime) InstanceStates(graphName string, cluster multicluster.ClusterName) map[types.NamespacedName]string {
	_, serving := rt.serving(graphName)
	sc := serving[cluster]
	if sc == nil {
		return nil
	}
	m := sc.member(cluster)
	if m == nil {
		return nil
	}
	return m.states.snapshot()
}
