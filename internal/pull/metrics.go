package pull

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The pull clusters' own series. Their graphs' CRD states, revisions and
// instances are in the fleet's series, from the same status as pushed
// clusters'; these say what only pull mode has: the agents' heartbeats.
var (
	// agentAvailable is the hub's verdict on each pull cluster's agent.
	agentAvailable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fleetgraph_pull_agent_available",
		Help: "1 while the hub sees the pull cluster's agent renew its heartbeat within its grace, 0 once it has not; absent while the hub cannot judge (no renewal seen yet, or the hub cannot read its own API server).",
	}, []string{"cluster"})
	// pullClusters counts the PullClusters served.
	pullClusters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fleetgraph_pull_clusters",
		Help: "PullClusters on the hub, being deleted or not.",
	})
)

func init() {
	metrics.Registry.MustRegister(agentAvailable, pullClusters)
}

// recordAvailability sets the cluster's series to a.
func recordAvailability(cluster string, a Availability) {
	switch a {
	case Available:
		agentAvailable.WithLabelValues(cluster).Set(1)
	case Unavailable:
		agentAvailable.WithLabelValues(cluster).Set(0)
	default:
		agentAvailable.DeleteLabelValues(cluster)
	}
}
