package spoke

import (
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
)

// TrimCache is a cluster.Option for providers that create the clusters a
// Runtime serves (give it to cluster.New). Their caches then drop what the
// runtime never reads: managedFields' field sets (the managers' names are
// kept: an ownership conflict names them, and orphan collection checks
// them) and kubectl's last-applied annotation; and cached objects share the
// strings and list items they repeat. Measured on instances of three
// children each, the cache then holds about 4.5 KiB per instance, against
// 9.5 KiB when only the field sets are dropped. A transform the options
// set already is kept.
func TrimCache(o *cluster.Options) { cacheopts.TrimCache(o) }

// ReportWatchErrors is a cluster.Option for providers that create the
// clusters a Runtime serves (give it to cluster.New). The Runtime then
// learns when an informer of the cluster's cache fails to list or watch a
// kind (permission revoked, kind gone, cluster unreachable), counts it in
// the fleetgraph_spoke_watch_errors_total and
// fleetgraph_spoke_watches_failing metrics, and shows it on the instances
// concerned as a ConditionResourcesWatched condition until the watch works
// again; it also notices at once that the graph's CRD was re-created.
// Without it nothing breaks, but such failures are only logged by
// client-go.
func ReportWatchErrors(o *cluster.Options) { cacheopts.ReportWatchErrors(o) }

// ConditionResourcesWatched is the instance condition that is present, with
// status False, while the watch of a kind the instance's graph uses fails
// on its cluster (see ReportWatchErrors); it goes when the watch works
// again. It changes neither the instance's state nor Ready: the children
// may be fine, only their changes are not seen.
const ConditionResourcesWatched = "ResourcesWatched"
