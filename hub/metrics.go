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

func init() {
	metrics.Registry.MustRegister(fanOutDuration)
}

// ForgetCluster drops every fan-out series of a cluster that was disengaged,
// so a fleet that churns clusters does not grow its metrics forever.
func ForgetCluster(cluster string) {
	fanOutDuration.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
}
