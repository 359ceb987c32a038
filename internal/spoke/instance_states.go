package spoke

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// InstanceStates returns, for each instance of the named graph on the
// named cluster that the version serving the cluster has reconciled, the
// state (status.state) it last reconciled it to, whether or not it could
// write it: what that version itself found, never what an earlier one
// wrote. It is nil when no version serves the cluster. A rollout's health
// gate reads it to judge each instance on the revision being rolled out.
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
