package testing

import (
	"context"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// Engagements records the Engage calls of a provider, for tests of
// providers: add it to a multicluster manager (mgr.Add) and it is engaged
// with every cluster the provider engages. Its methods are safe for
// concurrent use.
type Engagements struct {
	mu     sync.Mutex
	byName map[multicluster.ClusterName][]*Engagement
}

// Engagement is one Engage call.
type Engagement struct {
	// Ctx is the engagement's context: cancelled when the provider
	// disengages the cluster.
	Ctx context.Context
	// Cluster is the engaged cluster.
	Cluster cluster.Cluster
	// Host is the cluster's server URL without a trailing slash.
	Host string
}

// NewEngagements returns an empty record.
func NewEngagements() *Engagements {
	return &Engagements{byName: map[multicluster.ClusterName][]*Engagement{}}
}

// Start implements manager.Runnable: it waits for ctx.
func (r *Engagements) Start(ctx context.Context) error { <-ctx.Done(); return nil }

// Engage implements multicluster.Aware: it records the call.
func (r *Engagements) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byName[name] = append(r.byName[name], &Engagement{Ctx: ctx, Cluster: cl, Host: strings.TrimSuffix(cl.GetConfig().Host, "/")})
	return nil
}

// Current returns the latest engagement of the cluster called name while
// its context is live, else nil.
func (r *Engagements) Current(name multicluster.ClusterName) *Engagement {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.byName[name]
	if len(all) == 0 || all[len(all)-1].Ctx.Err() != nil {
		return nil
	}
	return all[len(all)-1]
}

// Count returns how many times the cluster called name was engaged.
func (r *Engagements) Count(name multicluster.ClusterName) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byName[name])
}
