package testing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	mcclusters "sigs.k8s.io/multicluster-runtime/pkg/clusters"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/lazycluster"
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
// It is built on multicluster-runtime's clusters.Clusters rather than its
// example providers/clusters.Provider, whose Add holds a lock while it sends
// on a channel of 10 that Start drains only after taking that lock: more
// than ten clusters added while Start begins deadlock both (seen with a
// thousand simulated clusters under -race). Add here only queues.
//
// A Provider can be started by one manager only; create one per manager.
type Provider struct {
	clusters    mcclusters.Clusters[cluster.Cluster]
	clusterOpts []cluster.Option

	mu      sync.Mutex
	wake    chan struct{} // one slot: the queue has something
	queue   []queued      // to be engaged, in the order added
	started bool
}

// queued is a cluster Add was given, not engaged yet.
type queued struct {
	name multicluster.ClusterName
	cl   cluster.Cluster
}

// NewProvider returns an empty Provider. clusterOpts apply to every cluster
// AddConfig creates (for instance a scheme), after the watch-error reporting
// of spoke.ReportWatchErrors, which every such cluster gets as the hub's
// providers give it.
func NewProvider(clusterOpts ...cluster.Option) *Provider {
	opts := append([]cluster.Option{cacheopts.ReportWatchErrors}, clusterOpts...)
	p := &Provider{clusters: mcclusters.New[cluster.Cluster](), clusterOpts: opts, wake: make(chan struct{}, 1)}
	p.clusters.ErrorHandler = log.Log.WithName("testing-provider").Error
	return p
}

// AddConfig creates a cluster for cfg and adds it under name. As the hub's
// providers do, the cluster is built and started at its first use (its
// client, reader, or a read or informer through its cache), so that a
// hub replica pays nothing for a cluster it does not serve.
func (p *Provider) AddConfig(ctx context.Context, name string, cfg *rest.Config) error {
	cl, err := lazycluster.New(rest.CopyConfig(cfg), p.clusterOpts...)
	if err != nil {
		return fmt.Errorf("creating cluster %q: %w", name, err)
	}
	return p.Add(ctx, name, cl)
}

// Add adds a ready-made cluster under name. It returns before the cluster is
// engaged; poll Get (or the behaviour under test) to wait for it.
func (p *Provider) Add(_ context.Context, name string, cl cluster.Cluster) error {
	p.mu.Lock()
	p.queue = append(p.queue, queued{name: multicluster.ClusterName(name), cl: cl})
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// Remove disengages the cluster: its context is cancelled, its cache stops,
// and Get returns multicluster.ErrClusterNotFound from then on.
func (p *Provider) Remove(name string) {
	n := multicluster.ClusterName(name)
	p.mu.Lock()
	p.queue = slices.DeleteFunc(p.queue, func(q queued) bool { return q.name == n })
	p.mu.Unlock()
	p.clusters.Remove(n)
}

// ClusterNames returns the engaged clusters, sorted.
func (p *Provider) ClusterNames() []multicluster.ClusterName {
	return p.clusters.ClusterNames()
}

// Get implements multicluster.Provider.
func (p *Provider) Get(ctx context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	return p.clusters.Get(ctx, name)
}

// IndexField implements multicluster.Provider.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return p.clusters.IndexField(ctx, obj, field, extract)
}

// Start implements multicluster.ProviderRunnable; mcmanager calls it.
func (p *Provider) Start(ctx context.Context, aware multicluster.Aware) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errStartedTwice
	}
	p.started = true
	p.mu.Unlock()
	for {
		for next, ok := p.pop(); ok; next, ok = p.pop() {
			if err := p.clusters.AddOrReplace(ctx, next.name, next.cl, aware); err != nil {
				p.clusters.ErrorHandler(err, "engaging a cluster", "name", next.name)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		}
	}
}

// errStartedTwice: a Provider belongs to one manager.
var errStartedTwice = errors.New("testing: the provider was already started")

// pop takes the first queued cluster.
func (p *Provider) pop() (queued, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		return queued{}, false
	}
	next := p.queue[0]
	p.queue = p.queue[1:]
	return next, true
}
