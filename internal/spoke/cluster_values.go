package spoke

import (
	"maps"
	"reflect"
	"sync"
	"time"

	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// bindCluster puts the cluster variable in vals for a graph that reads it:
// the member's cluster name (Options.LocalClusterName for the cluster
// engaged as "", the manager's own), for a graph that reads labels
// the labels Options.ClusterLabels gives it now, and for one that reads
// values the values Options.ClusterValues gives it now. A graph that does
// not read cluster costs nothing here.
func (m *member) bindCluster(vals graph.Values) {
	use := m.g.UsesCluster()
	if use == 0 {
		return
	}
	c := graph.Cluster{Name: string(m.cluster)}
	if c.Name == "" {
		c.Name = m.c.opts.LocalClusterName
	}
	if use&graph.ClusterLabels != 0 && m.c.opts.ClusterLabels != nil {
		c.Labels = m.c.opts.ClusterLabels(m.cluster)
	}
	if use&graph.ClusterValues != 0 {
		c.Values = m.clusterValues()
	}
	vals[graph.VarCluster] = c.Value()
}

// clusterValues returns the values Options.ClusterValues gives the graph
// on the member's cluster now.
func (m *member) clusterValues() map[string]any {
	if f := m.c.opts.ClusterValues; f != nil {
		return f(m.cluster, m.g.Name)
	}
	return nil
}

// valuesMemory is the cluster values a member last saw, to tell a change
// from a notice that changed nothing for its graph.
type valuesMemory struct {
	mu   sync.Mutex
	last map[string]any
}

// changed records now and reports whether it differs from what was
// recorded before (no values and empty values are the same).
func (v *valuesMemory) changed(now map[string]any) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	same := len(now) == 0 && len(v.last) == 0 || reflect.DeepEqual(now, v.last)
	v.last = now
	return !same
}

// rememberClusterValues records the values the member's reconciles read
// from now on; open calls it before the instance watch starts, so that a
// later change is told from them.
func (m *member) rememberClusterValues() {
	if m.g.UsesCluster()&graph.ClusterValues != 0 {
		m.values.changed(m.clusterValues())
	}
}

// recheckClusterValues asks for the graph's values on the member's
// cluster again and, when they changed, reconciles every instance again.
// It reports whether it did.
func (m *member) recheckClusterValues() bool {
	if m.g.UsesCluster()&graph.ClusterValues == 0 || m.c.opts.ClusterValues == nil {
		return false
	}
	if !m.values.changed(m.clusterValues()) {
		return false
	}
	m.requeueAll("cluster values changed")
	return true
}

// requeueAll reconciles every instance of the member again.
func (m *member) requeueAll(why string) {
	if m.ctx.Err() != nil {
		return
	}
	keys := m.states.keys()
	m.log.V(1).Info(why+": reconciling every instance again", "instances", len(keys))
	for _, key := range keys {
		m.enqueue(key)
	}
}

// ClusterValuesChanged has every member on the named clusters (all when
// none is named) recheck its graph's values (recheckClusterValues).
func (rt *Runtime) ClusterValuesChanged(clusters ...multicluster.ClusterName) {
	for _, c := range rt.allControllers() {
		if c.g.UsesCluster()&graph.ClusterValues == 0 {
			continue
		}
		for _, m := range c.liveMembers(clusters) {
			m.recheckClusterValues()
		}
	}
}

// liveMembers returns c's live members on the named clusters, or on every
// cluster when none is named.
func (c *controller) liveMembers(clusters []multicluster.ClusterName) []*member {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*member
	if len(clusters) == 0 {
		for name := range c.members {
			if m := c.liveLocked(name); m != nil {
				out = append(out, m)
			}
		}
		return out
	}
	for _, name := range clusters {
		if m := c.liveLocked(name); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// labelsMemory is the cluster labels a member last saw.
type labelsMemory struct {
	mu   sync.Mutex
	last map[string]string
}

// changed records now and reports whether it differs from what was
// recorded before (no labels and empty labels are the same).
func (l *labelsMemory) changed(now map[string]string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	same := maps.Equal(now, l.last)
	l.last = now
	return !same
}

// followsLabels reports whether the member follows its cluster's labels:
// its graph reads them, or reads values (which the platform may give by
// label), and Options.ClusterLabels gives them.
func (m *member) followsLabels() bool {
	return m.g.UsesCluster()&(graph.ClusterLabels|graph.ClusterValues) != 0 && m.c.opts.ClusterLabels != nil
}

// recheckClusterLabels asks for the cluster's labels and, when they
// changed, reconciles every instance again if the graph reads labels, or
// only if its values changed with them when it reads values alone.
func (m *member) recheckClusterLabels() {
	if !m.followsLabels() || !m.labels.changed(m.c.opts.ClusterLabels(m.cluster)) {
		return
	}
	if m.g.UsesCluster()&graph.ClusterLabels != 0 {
		m.values.changed(m.clusterValues())
		m.requeueAll("cluster labels changed")
		return
	}
	m.recheckClusterValues()
}

// followClusterLabels records the cluster's labels and asks for them again
// every Options.ClusterLabelsPoll (recheckClusterLabels): a relabelled
// cluster's children follow within a poll and a reconcile. A provider
// that says when labels change (Runtime.ClusterLabelsChanged) makes the
// poll a fallback; asking is a map read.
func (m *member) followClusterLabels() {
	if !m.followsLabels() {
		return
	}
	m.labels.changed(m.c.opts.ClusterLabels(m.cluster))
	poll := m.c.opts.ClusterLabelsPoll
	if poll < 0 {
		return
	}
	go func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-m.ctx.Done():
				return
			case <-t.C:
			}
			m.recheckClusterLabels()
		}
	}()
}

// ClusterLabelsChanged has every member on the named clusters (all when
// none is named) recheck its cluster's labels now rather than at its next
// poll (recheckClusterLabels).
func (rt *Runtime) ClusterLabelsChanged(clusters ...multicluster.ClusterName) {
	for _, c := range rt.allControllers() {
		for _, m := range c.liveMembers(clusters) {
			m.recheckClusterLabels()
		}
	}
}

// allControllers returns every version of every graph served.
func (rt *Runtime) allControllers() []*controller {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var out []*controller
	for _, gv := range rt.graphs {
		out = append(out, gv.controllers()...)
	}
	return out
}
