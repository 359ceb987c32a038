package hub

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// The interfaces a multicluster-runtime provider may implement to tell the
// hub more about its clusters. Each is optional and found with a type
// assertion on the provider; assert them at compile time:
//
//	var _ hub.ClusterLabeler = &Provider{}

// ClusterLabeler is implemented by providers that label their clusters
// (providers/secret from the cluster.fleetgraph.dev/ labels of a
// kubeconfig Secret, providers/kcp from a workspace's labels). Placement
// and rollout waves select clusters by these labels; a provider without it
// gives every cluster none.
type ClusterLabeler interface {
	// Labels returns the named cluster's labels; nil means none. It is
	// called often and must be quick and safe for concurrent use.
	Labels(name multicluster.ClusterName) map[string]string
}

// ClusterLabelNotifier is implemented by ClusterLabelers that know when a
// cluster's labels change (providers/secret: a kubeconfig Secret
// relabelled). The hub then follows a relabel at once, in graphs that read
// cluster.labels or cluster.values, instead of at the spoke runtime's next
// poll of the labels, which stays as the fallback.
type ClusterLabelNotifier interface {
	// NotifyLabelsChanged registers f, which the provider calls with a
	// cluster's name after that cluster's labels changed, once Labels
	// returns the new ones. f returns at once; it may be called
	// concurrently, and for a change that Labels shows no more. Each call
	// adds one more f; they are never removed.
	NotifyLabelsChanged(f func(multicluster.ClusterName))
}

// ClusterRegistry is implemented by providers that know which clusters are
// registered with them, engaged or not (providers/secret: a kubeconfig
// Secret names the cluster). Before the hub cleans up after a cluster that
// was disengaged, it asks: one still registered is being engaged again or
// failing for now, and has not left the fleet. For other providers the hub
// asks ClusterNames where the provider has it, else Get.
type ClusterRegistry interface {
	// Registered reports whether the provider still has a cluster of that
	// name. Safe for concurrent use.
	Registered(name multicluster.ClusterName) bool
}

// EngagementReporter is implemented by providers that can say which of the
// clusters they know they could not engage, and why; the hub lists those
// clusters as CRDNotEngaged in every graph's status and counts them in the
// fleetgraph_clusters_not_engaged metric. The reasons must not carry
// credentials.
type EngagementReporter interface {
	// EngagementFailures returns, per cluster name, why the cluster is not
	// engaged (e.g. "UnsafeKubeconfig: ..."). A cluster that is engaged,
	// or whose source is gone, is not listed. Safe for concurrent use.
	EngagementFailures() map[multicluster.ClusterName]string
}

// Publisher is implemented by providers whose clusters are served through
// something other than a CRD per cluster: providers/kcp's APIExport
// provider publishes each graph's schema in one kcp APIExport, and its
// clusters are the workspaces that bind it. With a Publisher the FanOut
// applies nothing to the clusters: it publishes, then asks the Publisher
// whether each cluster serves what was published.
type Publisher interface {
	// Publish makes g available to the clusters. It is called from every
	// fan-out attempt and must be cheap when g is published already. A
	// change that would break what is published is refused with an error
	// wrapping ErrIncompatible (unless g.AllowBreaking), an object it does
	// not own with one wrapping ErrConflict; what was published stays.
	Publish(ctx context.Context, g Graph) error
	// Serves reports whether cl serves what Publish published for g: nil
	// when it does, an error wrapping ErrNotServedYet while it is on its
	// way (the cluster is CRDApplied), one wrapping ErrIncompatible when
	// the cluster refuses it (CRDIncompatible). The FanOut then checks
	// that the cluster's discovery lists g's CRD kind and Kinds.
	Serves(ctx context.Context, cl cluster.Cluster, g Graph) error
}
