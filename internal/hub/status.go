package hub

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	// CRDUnreachable: the cluster's API server stopped answering the hub's
	// probe; the last known state is kept and shown again once it answers.
	CRDUnreachable CRDState = "Unreachable"
	// CRDNotEngaged: the provider could not engage the cluster (its
	// kubeconfig is unsafe or malformed, the server is unreachable or is
	// already engaged under another name); Message says why.
	CRDNotEngaged CRDState = "NotEngaged"
)

// Healthy reports whether the state needs no attention.
func (s CRDState) Healthy() bool { return s == CRDEstablished }

// Healthy reports whether the latest version of the graph is established
// and served on the cluster.
func (c ClusterStatus) Healthy() bool {
	return c.CRD.Healthy() && (!c.Serving || c.ServedGeneration == c.Generation)
}

// Explain is the one-line account of c written to the RGD: the state's
// message, prefixed with the version still served where it is not the
// latest.
func (c ClusterStatus) Explain() string {
	if !c.Serving || c.ServedGeneration == c.Generation {
		return c.Message
	}
	msg := fmt.Sprintf("serving generation %d; generation %d not served yet", c.ServedGeneration, c.Generation)
	if c.Message != "" {
		msg += ": " + c.Message
	}
	return msg
}

// ClusterStatus is a graph's state on one cluster.
type ClusterStatus struct {
	// Cluster is the provider's name for the cluster ("" in single-cluster
	// mode).
	Cluster string
	// CRD is the state of the generated CRD of the latest version there.
	CRD CRDState
	// Message explains a state other than Established.
	Message string
	// Generation is the RGD generation of the latest version of the graph,
	// the one CRD and Message are about.
	Generation int64
	// Serving reports whether some version of the graph serves the cluster.
	Serving bool
	// ServedGeneration is the RGD generation of the version serving the
	// cluster, valid when Serving. Where the latest version cannot be served
	// yet (CRD says why), the previous one keeps serving and this is lower
	// than Generation.
	ServedGeneration int64
	// Instances is how many instances of the graph the cluster holds.
	Instances int
	// ReadyInstances is how many of them are ACTIVE.
	ReadyInstances int
	// Since is when CRD last changed.
	Since time.Time
	// HandingOver reports that the hub replica that served the cluster let
	// it go to another replica, which has not reported it yet: the other
	// fields are the last state the first one saw. Always false for a lone
	// hub.
	HandingOver bool `json:",omitempty"`
}

// GraphStatus is a graph's state across the fleet, one entry per engaged
// cluster, sorted by cluster name.
type GraphStatus struct {
	Graph    string
	Clusters []ClusterStatus
	// AwaitingReplicas names, when hub replicas share the fleet, the
	// replicas that serve other graphs but have not reported their
	// clusters for this one yet: those clusters are missing from Clusters
	// until they do. Empty for a lone hub.
	AwaitingReplicas []string
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
		}
		if c.Healthy() {
			continue
		}
		out.Unhealthy++
		if len(out.UnhealthyClusters) < v1alpha1.MaxUnhealthyClusters {
			out.UnhealthyClusters = append(out.UnhealthyClusters, v1alpha1.ClusterHealth{
				Name: c.Cluster, State: c.state(), Message: c.Explain(),
			})
		}
	}
	return out
}

// Tracker records each graph's CRD state per cluster. It is safe for
// concurrent use. OnChange, if set before use, is called (outside the lock)
// with the graph's name whenever a state or message changes.
//
// Failures, if set before use, lists the clusters the provider could not
// engage, each with its reason (see FailuresOf); Snapshot shows them with
// state NotEngaged.
//
// Expected, if set before use, says which clusters should serve a graph
// (see Expectation); Snapshot shows each of them that has no state yet as
// Pending, so a new graph's status lists every cluster from its first
// moment, and a cluster the prober finds unreachable as Unreachable.
type Tracker struct {
	OnChange func(graph string)
	Failures func() map[string]string
	Expected func(graph string) Expectation

	mu          sync.Mutex
	graphs      map[string]map[string]*ClusterStatus
	unreachable map[string]string // cluster -> why
}

// state is the word written to the RGD for an unhealthy cluster.
func (c ClusterStatus) state() string {
	if c.CRD.Healthy() {
		return "Updating" // established, not switched over yet
	}
	return string(c.CRD)
}

// Set records the CRD state of graph on cluster, keeping the generation last
// recorded. It reports whether the state changed (not only the message).
func (t *Tracker) Set(graph, cluster string, state CRDState, msg string) bool {
	return t.Record(context.Background(), graph, cluster, -1, state, msg)
}

// Record records the CRD state of the given generation of graph on cluster
// (a negative generation keeps the one recorded). It reports whether the
// state or generation changed (not only the message), so callers can emit
// one event per transition. Nothing is recorded once ctx has ended: the
// work it reports on belongs to a graph or cluster that is gone, and
// recording it would bring a ghost back after DropGraph or DropCluster.
func (t *Tracker) Record(ctx context.Context, graph, cluster string, generation int64, state CRDState, msg string) bool {
	t.mu.Lock()
	if ctx.Err() != nil {
		t.mu.Unlock()
		return false
	}
	if t.graphs == nil {
		t.graphs = map[string]map[string]*ClusterStatus{}
	}
	byCluster := t.graphs[graph]
	if byCluster == nil {
		byCluster = map[string]*ClusterStatus{}
		t.graphs[graph] = byCluster
	}
	cur := byCluster[cluster]
	if generation < 0 {
		generation = 0
		if cur != nil {
			generation = cur.Generation
		}
	}
	transition := cur == nil || cur.CRD != state || cur.Generation != generation
	changed := transition || cur.Message != msg
	if changed {
		byCluster[cluster] = &ClusterStatus{Cluster: cluster, CRD: state, Message: msg, Generation: generation, Since: time.Now()}
	}
	if transition {
		var prev CRDState
		if cur != nil {
			prev = cur.CRD
		}
		recordState(graph, cluster, prev, state)
	}
	t.mu.Unlock()
	if changed {
		t.notify(graph)
	}
	return transition
}

// SetReachable records whether cluster answers (err nil) or not (err says
// why), unless ctx has ended. It reports whether that changed.
func (t *Tracker) SetReachable(ctx context.Context, cluster string, err error) bool {
	t.mu.Lock()
	if ctx.Err() != nil {
		t.mu.Unlock()
		return false
	}
	old, was := t.unreachable[cluster]
	switch {
	case err == nil && !was:
		t.mu.Unlock()
		return false
	case err == nil:
		delete(t.unreachable, cluster)
	default:
		if was && old == err.Error() {
			t.mu.Unlock()
			return false
		}
		if t.unreachable == nil {
			t.unreachable = map[string]string{}
		}
		t.unreachable[cluster] = err.Error()
	}
	// Every graph lists every engaged cluster it is placed on (Pending
	// before its first fan-out), so each may show the change.
	touched := make([]string, 0, len(t.graphs))
	for g := range t.graphs {
		touched = append(touched, g)
	}
	reachable.WithLabelValues(cluster).Set(map[bool]float64{true: 1, false: 0}[err == nil])
	t.mu.Unlock()
	for _, g := range touched {
		t.notify(g)
	}
	return err == nil || !was
}

// DropCluster forgets cluster for every graph (it was disengaged).
func (t *Tracker) DropCluster(cluster string) {
	t.mu.Lock()
	delete(t.unreachable, cluster)
	touched := make([]string, 0, len(t.graphs))
	for g, byCluster := range t.graphs {
		if cur, ok := byCluster[cluster]; ok {
			delete(byCluster, cluster)
			// Its series goes too, or one recorded after a new
			// engagement would sit beside it (recordState deletes the
			// state it knows was last).
			crdState.DeleteLabelValues(g, cluster, string(cur.CRD))
		}
		// Every graph may have listed it, as Pending at least.
		touched = append(touched, g)
	}
	t.mu.Unlock()
	for _, g := range touched {
		t.notify(g)
	}
}

// Engaged tells every graph's status that cluster joined: each lists it
// at once (Pending, see Expected), before any fan-out there reports.
func (t *Tracker) Engaged(cluster string) {
	t.mu.Lock()
	touched := make([]string, 0, len(t.graphs))
	for g := range t.graphs {
		touched = append(touched, g)
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
	crdState.DeletePartialMatch(prometheus.Labels{"graph": graph})
	t.mu.Unlock()
}

// InstanceCount is how many instances of a graph one cluster holds, and
// which version serves them.
type InstanceCount struct {
	Total, Ready int
	// Serving reports whether a version serves the cluster; Generation is
	// its RGD generation.
	Serving    bool
	Generation int64
}

// Expectation is what a graph's status must list even before any fan-out
// reported: the clusters that are engaged and placed to serve the graph,
// each with why it waits ("" when nothing holds it back but the fan-out
// itself), and the generation they are to serve.
type Expectation struct {
	Generation int64
	Clusters   map[string]string
}

// pendingMessage explains a Pending cluster that nothing else holds back.
const pendingMessage = "waiting for the first fan-out to this cluster to finish"

// Snapshot returns graph's status on every cluster it was tracked on and
// every cluster Expected lists (Pending until its first fan-out finishes),
// completed with instance counts from counts (keyed by cluster name).
func (t *Tracker) Snapshot(graph string, counts map[string]InstanceCount) GraphStatus {
	var failed map[string]string
	if t.Failures != nil {
		failed = t.Failures()
	}
	var expected Expectation
	if t.Expected != nil {
		expected = t.Expected(graph)
	}
	t.mu.Lock()
	out := GraphStatus{Graph: graph}
	byCluster, known := t.graphs[graph]
	if !known && len(expected.Clusters) > 0 {
		// Known from now on, so that a change of reachability tells it.
		if t.graphs == nil {
			t.graphs = map[string]map[string]*ClusterStatus{}
		}
		byCluster, known = map[string]*ClusterStatus{}, true
		t.graphs[graph] = byCluster
	}
	engaged := make(map[string]bool, len(byCluster)+len(expected.Clusters))
	add := func(cs ClusterStatus) {
		engaged[cs.Cluster] = true
		n := counts[cs.Cluster]
		cs.Instances, cs.ReadyInstances = n.Total, n.Ready
		cs.Serving, cs.ServedGeneration = n.Serving, n.Generation
		if why, ok := t.unreachable[cs.Cluster]; ok {
			cs.CRD, cs.Message = CRDUnreachable, why
		}
		out.Clusters = append(out.Clusters, cs)
	}
	for _, c := range byCluster {
		add(*c)
	}
	for name, why := range expected.Clusters {
		if _, ok := byCluster[name]; ok {
			continue
		}
		if why == "" {
			why = pendingMessage
		}
		add(ClusterStatus{Cluster: name, CRD: CRDPending, Message: why, Generation: expected.Generation})
	}
	t.mu.Unlock()
	for name, why := range failed {
		if known && !engaged[name] {
			out.Clusters = append(out.Clusters, ClusterStatus{Cluster: name, CRD: CRDNotEngaged, Message: why})
		}
	}
	sort.Slice(out.Clusters, func(i, j int) bool { return out.Clusters[i].Cluster < out.Clusters[j].Cluster })
	return out
}

func (t *Tracker) notify(graph string) {
	if t.OnChange != nil {
		t.OnChange(graph)
	}
}
