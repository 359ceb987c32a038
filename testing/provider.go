package testing

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcclusters "sigs.k8s.io/multicluster-runtime/providers/clusters"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
)

var (
	_ multicluster.Provider         = &Provider{}
	_ multicluster.ProviderRunnable = &Provider{}
)

// Provider is a multicluster-runtime provider whose clusters a test adds and
// removes by hand, before or while a manager runs. A cluster added before the
// manager starts is engaged when it starts; one added later is engaged once
// its cache has synced. Remove cancels the cluster's engagement context,
// which is how real providers signal that a cluster went away.
//
// A Provider can be started by one manager only; create one per manager.
type Provider struct {
	inner       *mcclusters.Provider
	clusterOpts []cluster.Option
}

// NewProvider returns an empty Provider. clusterOpts apply to every cluster
// AddConfig creates (for instance a scheme), after the watch-error reporting
// of spoke.ReportWatchErrors, which every such cluster gets as the hub's
// providers give it.
func NewProvider(clusterOpts ...cluster.Option) *Provider {
	opts := append([]cluster.Option{cacheopts.ReportWatchErrors}, clusterOpts...)
	return &Provider{inner: mcclusters.New(), clusterOpts: opts}
}

// AddConfig creates a cluster for cfg and adds it under name.
func (p *Provider) AddConfig(ctx context.Context, name string, cfg *rest.Config) error {
	cl, err := cluster.New(rest.CopyConfig(cfg), p.clusterOpts...)
	if err != nil {
		return fmt.Errorf("creating cluster %q: %w", name, err)
	}
	return p.Add(ctx, name, cl)
}

// Add adds a ready-made cluster under name. It returns before the cluster is
// engaged; poll Get (or the behaviour under test) to wait for it.
func (p *Provider) Add(ctx context.Context, name string, cl cluster.Cluster) error {
	return p.inner.Add(ctx, multicluster.ClusterName(name), cl)
}

// Remove disengages the cluster: its context is cancelled, its cache stops,
// and Get returns multicluster.ErrClusterNotFound from then on.
func (p *Provider) Remove(name string) {
	p.inner.Remove(multicluster.ClusterName(name))
}

// ClusterNames returns the engaged clusters, sorted.
func (p *Provider) ClusterNames() []multicluster.ClusterName {
	return p.inner.ClusterNames()
}

// Get implements multicluster.Provider.
func (p *Provider) Get(ctx context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	return p.inner.Get(ctx, name)
}

// IndexField implements multicluster.Provider.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return p.inner.IndexField(ctx, obj, field, extract)
}

// Start implements multicluster.ProviderRunnable; mcmanager calls it.
func (p *Provider) Start(ctx context.Context, aware multicluster.Aware) error {
	return p.inner.Start(ctx, aware)
}
