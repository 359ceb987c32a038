package sdk

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metrics of the fleet's state are set from the same status the RGD
// and the records show (clusterStatus), each time it is written: with
// replicas, each replica sets them for the clusters it serves.
var (
	// fleetRevision is the revision serving each cluster and the one it
	// should serve.
	fleetRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fleetgraph_graph_cluster_revision",
		Help: "The revision of a graph serving a cluster (kind=served; absent while none does) and the one it should serve (kind=desired).",
	}, []string{"graph", "cluster", "kind"})
	// fleetInstances counts a graph's instances on each cluster.
	fleetInstances = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fleetgraph_graph_cluster_instances",
		Help: "Instances of a graph on a cluster: all of them (state=total), ACTIVE (state=ready) and in ERROR (state=error).",
	}, []string{"graph", "cluster", "state"})
	// fleetBehind is 1 for why a cluster does not serve the latest
	// revision of a graph, or the revision it should.
	fleetBehind = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fleetgraph_graph_cluster_behind",
		Help: "1 for the reason (RollingOut, Held, RolledBack, Failed, GateNotPassed, Incompatible, Unreachable) a cluster does not serve the graph's latest revision, or the one it should; absent when it does.",
	}, []string{"graph", "cluster", "reason"})
)

func init() {
	metrics.Registry.MustRegister(fleetRevision, fleetInstances, fleetBehind)
}

// fleetSeries remembers, per graph, the clusters and reason last set, so
// that a cluster gone from a graph's status loses its series.
var fleetSeries = struct {
	sync.Mutex
	byGraph map[string]map[string]string // graph -> cluster -> reason
}{byGraph: map[string]map[string]string{}}

// setFleetMetrics sets the fleet's series of st's graph from st.
func setFleetMetrics(st GraphStatus) {
	fleetSeries.Lock()
	defer fleetSeries.Unlock()
	last := fleetSeries.byGraph[st.Graph]
	now := make(map[string]string, len(st.Clusters))
	for _, c := range st.Clusters {
		g, cl := st.Graph, c.Cluster
		now[cl] = string(c.Reason)
		if c.Serving {
			fleetRevision.WithLabelValues(g, cl, "served").Set(float64(c.ServedRevision))
		} else {
			fleetRevision.DeleteLabelValues(g, cl, "served")
		}
		fleetRevision.WithLabelValues(g, cl, "desired").Set(float64(c.DesiredRevision))
		fleetInstances.WithLabelValues(g, cl, "total").Set(float64(c.Instances))
		fleetInstances.WithLabelValues(g, cl, "ready").Set(float64(c.ReadyInstances))
		fleetInstances.WithLabelValues(g, cl, "error").Set(float64(c.ErrorInstances))
		if was, ok := last[cl]; ok && was != "" && was != string(c.Reason) {
			fleetBehind.DeleteLabelValues(g, cl, was)
		}
		if c.Reason != "" {
			fleetBehind.WithLabelValues(g, cl, string(c.Reason)).Set(1)
		}
	}
	for cl, reason := range last {
		if _, ok := now[cl]; !ok {
			deleteClusterSeries(st.Graph, cl, reason)
		}
	}
	fleetSeries.byGraph[st.Graph] = now
}

// forgetFleetMetrics drops every series of a removed graph.
func forgetFleetMetrics(graph string) {
	fleetSeries.Lock()
	defer fleetSeries.Unlock()
	for cl, reason := range fleetSeries.byGraph[graph] {
		deleteClusterSeries(graph, cl, reason)
	}
	delete(fleetSeries.byGraph, graph)
}

func deleteClusterSeries(graph, cluster, reason string) {
	for _, kind := range []string{"served", "desired"} {
		fleetRevision.DeleteLabelValues(graph, cluster, kind)
	}
	for _, state := range []string{"total", "ready", "error"} {
		fleetInstances.DeleteLabelValues(graph, cluster, state)
	}
	if reason != "" {
		fleetBehind.DeleteLabelValues(graph, cluster, reason)
	}
}
