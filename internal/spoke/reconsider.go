package spoke

import (
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// Reconsider makes the runtime decide again which version of the named
// graph serves the named cluster, after what the gate decides there
// changed (a placement or a rollout moved). The version serving the
// cluster is retired when keep refuses it, waiting for its in-flight
// reconciles; then, unless the latest version serves the cluster, its gate
// there is tried again at once instead of at the end of its backoff. A
// version the gate refuses leaves the previous one serving, or none when
// keep refused that one too: the fallback decides. Unknown graphs and
// clusters are a no-op.
func (rt *Runtime) Reconsider(graphName string, cluster multicluster.ClusterName, keep func(Version) bool) {
	e := rt.clusters.get(cluster)
	rt.mu.Lock()
	var latest, retired *controller
	servedByLatest := false
	if gv := rt.graphs[graphName]; gv != nil {
		latest = gv.current
		if sc := gv.serving[cluster]; sc != nil && !keep(sc.v) {
			delete(gv.serving, cluster)
			retired = sc
		}
		servedByLatest = latest != nil && gv.serving[cluster] == latest
	}
	rt.mu.Unlock()
	if retired != nil {
		retired.retire(cluster)
	}
	if latest == nil || e == nil || servedByLatest {
		return
	}
	latest.reattach(e)
}

// reattach replaces c's member on e's cluster, which has not passed the
// gate, with a new one whose gate is tried at once.
func (c *controller) reattach(e *engagement) {
	c.mu.Lock()
	if m := c.members[e.name]; m != nil {
		m.cancel()
	}
	c.mu.Unlock()
	c.attach(e)
}
