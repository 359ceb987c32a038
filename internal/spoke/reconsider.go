package spoke

import (
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// Reconsider retires the controller serving the cluster when keep refuses
// its version (retire waits for its reconciles in flight), then, unless
// the latest controller serves the cluster, gives the latest a new member
// there whose gate is tried at once (reattach): pass switches the cluster
// over, or the fallback decides.
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
