package sdk

import (
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// clusterLabels gives the spoke runtime each cluster's labels, for graphs
// whose expressions read cluster.labels: the provider's, when it is a
// ClusterLabeler (the same labels placement selects by); none otherwise,
// and none in single-cluster mode.
func (h *Hub) clusterLabels(name multicluster.ClusterName) map[string]string {
	if labeler, ok := h.provider.(ClusterLabeler); ok {
		return labeler.Labels(name)
	}
	return nil
}
