package spoke

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// Metrics are registered with controller-runtime's registry, so they are
// served wherever the manager serves metrics. Every series carries the
// cluster it describes.
var (
	reconcileTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetgraph_spoke_reconcile_total",
		Help: "Instance reconciles by graph, cluster and result (success, error, requeue).",
	}, []string{"graph", "cluster", "result"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetgraph_spoke_reconcile_errors_total",
		Help: "Instance reconciles that returned an error, by graph and cluster.",
	}, []string{"graph", "cluster"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fleetgraph_spoke_reconcile_duration_seconds",
		Help:    "Duration of instance reconciles, by graph and cluster.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"graph", "cluster"})
	instancesByState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fleetgraph_spoke_instances",
		Help: "Instances by graph, cluster and status.state.",
	}, []string{"graph", "cluster", "state"})
)

func init() {
	metrics.Registry.MustRegister(reconcileTotal, reconcileErrors, reconcileDuration, instancesByState)
}

// forgetClusterMetrics drops every series of one graph on one cluster, when
// the graph stops being served there.
func forgetClusterMetrics(graphName, cluster string) {
	labels := prometheus.Labels{"graph": graphName, "cluster": cluster}
	reconcileTotal.DeletePartialMatch(labels)
	reconcileErrors.DeletePartialMatch(labels)
	reconcileDuration.DeletePartialMatch(labels)
	instancesByState.DeletePartialMatch(labels)
	instance.ForgetMetrics(graphName, cluster)
}
