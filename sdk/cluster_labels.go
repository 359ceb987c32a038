package sdk

import (
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// labels gives the spoke runtime each cluster's labels, for graphs
// whose expressions read cluster.labels: the provider's, when it is a
// ClusterLabeler (the same labels placement selects by); none otherwise,
// and none in single-cluster mode.
func (s *clusterSource) labels(name multicluster.ClusterName) map[string]string {
	if labeler, ok := s.h.provider.(ClusterLabeler); ok {
		return labeler.Labels(name)
	}
	return nil
}
