package hub

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// fanOutDuration times one fan-out attempt of a graph's CRD to a cluster,
// from the first check to Established (or failure).
var fanOutDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "fleetgraph_crd_fanout_duration_seconds",
	Help:    "Time to make a graph's CRD established on one cluster, by outcome.",
	Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
}, []string{"cluster", "graph", "state"})

// crdState is 1 for the state a graph's CRD is in on a cluster, as
// FleetStatus shows it.
var crdState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "fleetgraph_graph_cluster_state",
	Help: "1 for the state (Pending, Applied, Established, Conflict, Incompatible, Error, Unreachable) a graph has on a cluster.",
}, []string{"graph", "cluster", "state"})

// reachable is the probe's verdict on each engaged cluster.
var reachable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "fleetgraph_cluster_reachable",
	Help: "1 while the cluster's API server answers the hub's probe, 0 while it is Unreachable.",
}, []string{"cluster"})

// engagedClusters counts the clusters the providers engaged.
var engagedClusters = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "fleetgraph_clusters_engaged",
	Help: "Clusters engaged by the provider and served by the hub.",
})

func init() {
	metrics.Registry.MustRegister(fanOutDuration, crdState, reachable, engagedClusters, notEngaged)
}

// clusterEngaged counts a cluster in or out of fleetgraph_clusters_engaged.
func clusterEngaged(in bool) {
	if in {
		engagedClusters.Inc()
	} else {
		engagedClusters.Dec()
	}
}

// recordState moves the cluster's CRD state series of graph from prev
// (none when empty) to state. It deletes prev's series by its labels: a
// partial match scans every series, and with thousands of clusters that
// scan, under the tracker's lock, was a seventh of the hub's CPU while a
// fleet engaged.
func recordState(graph, cluster string, prev, state CRDState) {
	if prev != "" && prev != state {
		crdState.DeleteLabelValues(graph, cluster, string(prev))
	}
	crdState.WithLabelValues(graph, cluster, string(state)).Set(1)
}

// forgetClusterSeries drops every fan-out series of a cluster that was
// disengaged, so a fleet that churns clusters does not grow its metrics
// forever.
func forgetClusterSeries(cluster string) {
	fanOutDuration.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	crdState.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	reachable.DeleteLabelValues(cluster)
}
