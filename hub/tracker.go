package hub

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// tracker records each graph's CRD state per cluster. It is safe for
// concurrent use. onChange, if set, is called (outside the lock) with the
// graph's name whenever a state or message changes.
//
// failures, if set, lists the clusters the provider could not engage, each
// with its reason; snapshot shows them with state NotEngaged.
//
// expected, if set, says which clusters should serve a graph (see
// Options.Expect); snapshot shows each of them that has no state yet as
// Pending, so a new graph's status lists every cluster from its first
// moment, and a cluster the prober finds unreachable as Unreachable.
type tracker struct {
	onChange func(graph string)
	failures func() map[string]string
	expected func(graph string) (int64, map[string]string)

	mu          sync.Mutex
	graphs      map[string]map[string]*ClusterStatus
	unreachable map[string]string // cluster -> why
}

// set records the CRD state of graph on cluster, keeping the generation last
// recorded. It reports whether the state changed (not only the message).
func (t *tracker) set(graph, cluster string, state CRDState, msg string) bool {
	return t.record(context.Background(), graph, cluster, -1, state, msg)
}

// record is recordVersion of a version without a revision number.
func (t *tracker) record(ctx context.Context, graph, cluster string, generation int64, state CRDState, msg string) bool {
	return t.recordVersion(ctx, graph, cluster, generation, 0, state, msg)
}

// recordVersion records the CRD state of the given generation (and
// revision) of graph on cluster (a negative generation keeps the
// generation and revision recorded). It reports whether the
// state or generation changed (not only the message), so callers can emit
// one event per transition. Nothing is recorded once ctx has ended: the
// work it reports on belongs to a graph or cluster that is gone, and
// recording it would bring a ghost back after dropGraph or dropCluster.
func (t *tracker) recordVersion(ctx context.Context, graph, cluster string, generation, revision int64, state CRDState, msg string) bool {
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
		generation, revision = 0, 0
		if cur != nil {
			generation, revision = cur.Generation, cur.Revision
		}
	}
	transition := cur == nil || cur.CRD != state || cur.Generation != generation || cur.Revision != revision
	changed := transition || cur.Message != msg
	if changed {
		byCluster[cluster] = &ClusterStatus{Cluster: cluster, CRD: state, Message: msg, Generation: generation, Revision: revision, Since: time.Now()}
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

// setReachable records whether cluster answers (err nil) or not (err says
// why), unless ctx has ended. It reports whether that changed.
func (t *tracker) setReachable(ctx context.Context, cluster string, err error) bool {
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

// dropCluster forgets cluster for every graph (it was disengaged).
func (t *tracker) dropCluster(cluster string) {
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

// engaged tells every graph's status that cluster joined: each lists it
// at once (Pending, see expected), before any fan-out there reports.
func (t *tracker) engaged(cluster string) {
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

// dropGraph forgets graph everywhere (it was unregistered).
func (t *tracker) dropGraph(graph string) {
	t.mu.Lock()
	delete(t.graphs, graph)
	crdState.DeletePartialMatch(prometheus.Labels{"graph": graph})
	t.mu.Unlock()
}

// pendingMessage explains a Pending cluster that nothing else holds back.
const pendingMessage = "waiting for the first fan-out to this cluster to finish"

// snapshot returns graph's status on every cluster it was tracked on and
// every cluster expected lists (Pending until its first fan-out finishes).
func (t *tracker) snapshot(graph string) GraphStatus {
	var failed map[string]string
	if t.failures != nil {
		failed = t.failures()
	}
	var generation int64
	var expected map[string]string
	if t.expected != nil {
		generation, expected = t.expected(graph)
	}
	t.mu.Lock()
	out := GraphStatus{Graph: graph}
	byCluster, known := t.graphs[graph]
	if !known && len(expected) > 0 {
		// Known from now on, so that a change of reachability tells it.
		if t.graphs == nil {
			t.graphs = map[string]map[string]*ClusterStatus{}
		}
		byCluster, known = map[string]*ClusterStatus{}, true
		t.graphs[graph] = byCluster
	}
	engaged := make(map[string]bool, len(byCluster)+len(expected))
	add := func(cs ClusterStatus) {
		engaged[cs.Cluster] = true
		if why, ok := t.unreachable[cs.Cluster]; ok {
			cs.CRD, cs.Message = CRDUnreachable, why
		}
		out.Clusters = append(out.Clusters, cs)
	}
	for _, c := range byCluster {
		add(*c)
	}
	for name, why := range expected {
		if _, ok := byCluster[name]; ok {
			continue
		}
		if why == "" {
			why = pendingMessage
		}
		add(ClusterStatus{Cluster: name, CRD: CRDPending, Message: why, Generation: generation})
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

func (t *tracker) notify(graph string) {
	if t.onChange != nil {
		t.onChange(graph)
	}
}

// unreachableWhy says why the prober finds cluster unreachable, and false
// while it answers.
func (t *tracker) unreachableWhy(cluster string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	why, ok := t.unreachable[cluster]
	return why, ok
}
