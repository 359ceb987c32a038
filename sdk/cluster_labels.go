package sdk

import (
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
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

// followLabelNotices makes relabels reach graphs at once, rather than at
// the spoke runtime's next poll of the labels, when the provider says when
// labels change (hub.ClusterLabelNotifier, as providers/secret does); hub
// graphs that read fleet.clusters look at the fleet again, rather than at
// their next poll (TargetOptions.FleetPoll), and the ClusterValues
// statuses are looked at again too.
func (s *clusterSource) followLabelNotices() {
	notifier, ok := s.h.provider.(hub.ClusterLabelNotifier)
	if !ok {
		return
	}
	notifier.NotifyLabelsChanged(func(name multicluster.ClusterName) {
		s.h.runtime.ClusterLabelsChanged(name)
		s.h.hubGraphs.ClusterLabelsChanged(string(name))
		s.h.values.changed()
	})
}
