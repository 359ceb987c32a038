package hub

import (
	"context"
)

// Admissions binds and removes admission policies (Admission) on clusters
// whose CRD something other than a FanOut applies: fleetgraph's hub
// graphs apply theirs on the hub cluster themselves and stamp their
// instances there. It binds a policy as a FanOut does once the CRD is
// Established (only once a probe shows the API server can run it, and
// only where the cluster serves MutatingAdmissionPolicy), and a removal
// fences off every activation that began before it. Its methods are safe
// for concurrent use.
type Admissions struct {
	a admissions
}

// NewAdmissions returns an Admissions; opts gives its field manager,
// request timeout and logger (their defaults as for New), and nothing
// else of them is used.
func NewAdmissions(opts Options) *Admissions {
	o := opts.withDefaults()
	return &Admissions{a: admissions{opts: &o, refresh: true}}
}

// Activate binds the named graph's adm on c, in the background, once the
// API server can run it; call it once the kind's CRD is Established on c.
// The work lives as long as c.Engagement, or ctx when that is nil, and
// ends early when Remove is called for the same cluster and graph. Where
// the binding exists already, the policy and binding are applied again
// (unchanged objects are not written), so a changed policy takes effect.
func (a *Admissions) Activate(ctx context.Context, c Cluster, graph string, adm *Admission) {
	a.a.activateLater(ctx, c, Graph{Name: graph, Admission: adm}, a.a.fence.begin())
}

// Remove stops any activation of the named graph's policy on c, then
// deletes adm's policy, binding and probe there. Absent objects, and a
// cluster that does not serve the API, count as removed.
func (a *Admissions) Remove(ctx context.Context, c Cluster, graph string, adm *Admission) error {
	return a.a.remove(ctx, c, Graph{Name: graph, Admission: adm})
}
