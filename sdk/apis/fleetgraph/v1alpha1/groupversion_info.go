package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is fleetgraph's own API group and version.
	GroupVersion = schema.GroupVersion{Group: "fleetgraph.dev", Version: "v1alpha1"}

	// SchemeBuilder registers GraphRevision, GraphRollout, ClusterValues,
	// the pull-mode kinds (PullCluster, GraphAssignment, GraphReport) and
	// their lists with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme, so that a
	// typed client can read and write them.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&GraphRevision{}, &GraphRevisionList{}, &GraphRollout{}, &GraphRolloutList{}, &ClusterValues{}, &ClusterValuesList{},
		&PullCluster{}, &PullClusterList{}, &GraphAssignment{}, &GraphAssignmentList{}, &GraphReport{}, &GraphReportList{})
}
