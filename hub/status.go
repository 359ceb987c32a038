package hub

import (
	"sort"
	"sync"
	"time"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// CRDState is where a graph's generated CRD stands on one cluster.
type CRDState string

const (
	// CRDPending: fan-out to the cluster has not finished a first attempt.
	CRDPending CRDState = "Pending"
	// CRDApplied: the CRD was applied and is not established yet.
	CRDApplied CRDState = "Applied"
	// CRDEstablished: the CRD is established and instances are served.
	CRDEstablished CRDState = "Established"
	// CRDConflict: a CRD of that name exists and fleetgraph does not own it;
	// it is left untouched.
	CRDConflict CRDState = "Conflict"
	// CRDIncompatible: the cluster does not serve a kind the graph needs, or
	// the new schema would break the one served there.
	CRDIncompatible CRDState = "Incompatible"
	// CRDError: any other failure; retried with backoff.
	CRDError CRDState = "Error"
)

// Healthy reports whether the state needs no attention.
func (s CRDState) Healthy() bool { return s == CRDEstablished }

// ClusterStatus is a graph's state on one cluster.
type ClusterStatus struct {
	// Cluster is the provider's name for the cluster ("" in single-cluster
	// mode).
	Cluster string
	// CRD is the state of the generated CRD there.
	CRD CRDState
	// Message explains a state other than Established.
	Message string
	// Instances is how many instances of the graph the cluster holds.
	Instances int
	// ReadyInstances is how many of them are ACTIVE.
	ReadyInstances int
	// Since is when CRD last changed.
	Since time.Time
}

// GraphStatus is a graph's state across the fleet, one entry per engaged
// cluster, sorted by cluster name.
type GraphStatus struct {
	Graph    string
	Clusters []ClusterStatus
}

// Summary condenses s into the bounded form written to the RGD's status:
// counts, plus at most v1alpha1.MaxUnhealthyClusters unhealthy clusters, so
// the status stays small on a fleet of thousands.
func (s GraphStatus) Summary() *v1alpha1.FleetStatus {
	out := &v1alpha1.FleetStatus{Clusters: int32(len(s.Clusters))}
	for _, c := range s.Clusters {
		out.Instances += int64(c.Instances)
		out.ReadyInstances += int64(c.ReadyInstances)
		if c.CRD.Healthy() {
			out.Established++
			continue
		}
		out.Unhealthy++
		if len(out.UnhealthyClusters) < v1alpha1.MaxUnhealthyClusters {
			out.UnhealthyClusters = append(out.UnhealthyClusters, v1alpha1.ClusterHealth{
				Name: c.Cluster, State: string(c.CRD), Message: c.Message,
			})
		}
	}
	return out
}

// Tracker records each graph's CRD state per cluster. It is safe for
// concurrent use. OnChange, if set before use, is called (outside the lock)
// with the graph's name whenever a state or message changes.
type Tracker struct {
	OnChange func(graph string)

	mu     sync.Mutex
	graphs map[string]map[string]*ClusterStatus
}

// Set records the CRD state of graph on cluster. It reports whether the
// state changed (not only the message), so callers can emit one event per
// transition.
func (t *Tracker) Set(graph, cluster string, state CRDState, msg string) bool {
	t.mu.Lock()
	if t.graphs == nil {
		t.graphs = map[string]map[string]*ClusterStatus{}
	}
	byCluster := t.graphs[graph]
	if byCluster == nil {
		byCluster = map[string]*ClusterStatus{}
		t.graphs[graph] = byCluster
	}
	cur := byCluster[cluster]
	transition := cur == nil || cur.CRD != state
	changed := transition || cur.Message != msg
	if changed {
		byCluster[cluster] = &ClusterStatus{Cluster: cluster, CRD: state, Message: msg, Since: time.Now()}
	}
	t.mu.Unlock()
	if changed {
		t.notify(graph)
	}
	return transition
}

// DropCluster forgets cluster for every graph (it was disengaged).
func (t *Tracker) DropCluster(cluster string) {
	t.mu.Lock()
	var touched []string
	for g, byCluster := range t.graphs {
		if _, ok := byCluster[cluster]; ok {
			delete(byCluster, cluster)
			touched = append(touched, g)
		}
	}
	t.mu.Unlock()
	for _, g := range touched {
		t.notify(g)
	}
}

// DropGraph forgets graph everywhere (it was unregistered).
func (t *Tracker) DropGraph(graph string) {
	t.mu.Lock()
	delete(t.graphs, graph)
	t.mu.Unlock()
}

// InstanceCount is how many instances of a graph one cluster holds.
type InstanceCount struct {
	Total, Ready int
}

// Snapshot returns graph's status on every cluster it was tracked on,
// completed with instance counts from counts (keyed by cluster name).
func (t *Tracker) Snapshot(graph string, counts map[string]InstanceCount) GraphStatus {
	t.mu.Lock()
	out := GraphStatus{Graph: graph}
	for _, c := range t.graphs[graph] {
		cs := *c
		cs.Instances, cs.ReadyInstances = counts[c.Cluster].Total, counts[c.Cluster].Ready
		out.Clusters = append(out.Clusters, cs)
	}
	t.mu.Unlock()
	sort.Slice(out.Clusters, func(i, j int) bool { return out.Clusters[i].Cluster < out.Clusters[j].Cluster })
	return out
}

func (t *Tracker) notify(graph string) {
	if t.OnChange != nil {
		t.OnChange(graph)
	}
}
