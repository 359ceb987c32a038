package kcp

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fleetgraph/fleetgraph/hub"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/multicluster-runtime/pkg/clusters"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

const (
	// DefaultWorkers is how many workspaces are engaged at once.
	DefaultWorkers = 4
	// DefaultCacheSyncTimeout bounds the wait for a new cluster's cache.
	DefaultCacheSyncTimeout = 30 * time.Second
)

var (
	_ multicluster.Provider         = &Provider{}
	_ multicluster.ProviderRunnable = &Provider{}
	_ hub.ClusterLabeler            = &Provider{}
)

// Options configure a workspace Provider. The zero value is valid.
type Options struct {
	// Recursive engages every workspace of the tree below the parent, not
	// only its children. Defaults to false.
	Recursive bool
	// ClusterOptions apply to every cluster created (a scheme, cache
	// options). Defaults to none.
	ClusterOptions []cluster.Option
	// Workers is how many workspaces are processed at once, so that one
	// slow workspace does not hold up the others. Defaults to DefaultWorkers.
	Workers int
	// CacheSyncTimeout bounds the wait for a new cluster's cache to sync.
	// Defaults to DefaultCacheSyncTimeout.
	CacheSyncTimeout time.Duration
}

func setOptionsDefaults(opts Options) Options {
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.CacheSyncTimeout == 0 {
		opts.CacheSyncTimeout = DefaultCacheSyncTimeout
	}
	return opts
}

// Provider is a multicluster-runtime provider whose clusters are the kcp
// workspaces below a parent workspace. Each Ready workspace is engaged as a
// cluster named by its logical cluster name (the Workspace's spec.cluster),
// with requests going to <server>/clusters/<name>; Path maps the name back
// to the workspace's path. A workspace is disengaged (its context
// cancelled) when it is being deleted or gone; with Options.Recursive its
// whole subtree goes with it.
//
// All methods are safe for concurrent use. A Provider is started once, by
// one multicluster manager.
type Provider struct {
	opts     Options
	log      logr.Logger
	base     *rest.Config
	parent   logicalcluster.Path
	clusters clusters.Clusters[cluster.Cluster]
	queue    workqueue.TypedRateLimitingInterface[workspaceKey]

	ctx   context.Context
	aware multicluster.Aware

	lock     sync.RWMutex
	started  bool
	watchers map[string]*watcher // by workspace path
	engaged  map[workspaceKey]logicalcluster.Name
	paths    map[logicalcluster.Name]logicalcluster.Path
}

// workspaceKey names a Workspace object: its parent's path and its name.
type workspaceKey struct {
	parent string
	name   string
}

func (k workspaceKey) path() logicalcluster.Path {
	return logicalcluster.NewPath(k.parent).Join(k.name)
}

// New returns a Provider for the workspaces below parent (e.g. root:org).
// cfg reaches the kcp server (a shard or the front-proxy); a
// /clusters/<...> suffix of its host is ignored. Its credentials must allow
// listing and watching Workspaces in parent (and, with Recursive, below it)
// and whatever the engaged clusters' controllers do in the workspaces.
func New(cfg *rest.Config, parent logicalcluster.Path, opts Options) (*Provider, error) {
	if cfg == nil {
		return nil, fmt.Errorf("kcp workspace provider: a rest.Config is required")
	}
	if parent.Empty() {
		return nil, fmt.Errorf("kcp workspace provider: a parent workspace path is required")
	}
	opts = setOptionsDefaults(opts)
	p := &Provider{
		opts:     opts,
		log:      log.Log.WithName("kcp-workspace-provider"),
		base:     baseConfig(cfg),
		parent:   parent,
		clusters: clusters.New[cluster.Cluster](),
		watchers: map[string]*watcher{},
		engaged:  map[workspaceKey]logicalcluster.Name{},
		paths:    map[logicalcluster.Name]logicalcluster.Path{},
	}
	p.clusters.WaitCacheTimeout = opts.CacheSyncTimeout
	p.clusters.ErrorHandler = p.log.Error
	return p, nil
}

// Start implements multicluster.ProviderRunnable: it watches the parent's
// Workspaces and engages them with aware until ctx is done, then stops its
// watches and returns. Engaged clusters' contexts derive from ctx.
func (p *Provider) Start(ctx context.Context, aware multicluster.Aware) error {
	p.lock.Lock()
	if p.started {
		p.lock.Unlock()
		return fmt.Errorf("kcp workspace provider already started")
	}
	p.started, p.ctx, p.aware = true, ctx, aware
	p.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[workspaceKey](),
		workqueue.TypedRateLimitingQueueConfig[workspaceKey]{Name: "kcp-workspace-provider"})
	p.lock.Unlock()

	if err := p.watch(p.parent); err != nil {
		return err
	}
	var workers sync.WaitGroup
	for range p.opts.Workers {
		workers.Go(func() {
			for p.processNext() {
			}
		})
	}
	<-ctx.Done()
	p.queue.ShutDown()
	workers.Wait()
	p.stopWatchers()
	return nil
}

// Get returns the engaged cluster with the logical cluster name name, or an
// error wrapping multicluster.ErrClusterNotFound.
func (p *Provider) Get(ctx context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	return p.clusters.Get(ctx, name)
}

// IndexField implements multicluster.Provider: the index is added to every
// engaged cluster and to every cluster engaged later.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return p.clusters.IndexField(ctx, obj, field, extract)
}

// ClusterNames returns the logical cluster names of the engaged workspaces,
// sorted.
func (p *Provider) ClusterNames() []multicluster.ClusterName {
	p.lock.RLock()
	defer p.lock.RUnlock()
	names := make([]multicluster.ClusterName, 0, len(p.paths))
	for name := range maps.Keys(p.paths) {
		names = append(names, multicluster.ClusterName(name))
	}
	slices.Sort(names)
	return names
}

// Path returns the workspace path (e.g. root:org:team) of the engaged
// cluster name, or the empty path when no such cluster is engaged.
func (p *Provider) Path(name multicluster.ClusterName) logicalcluster.Path {
	p.lock.RLock()
	defer p.lock.RUnlock()
	return p.paths[logicalcluster.Name(name)]
}

// baseConfig copies cfg with its host reduced to the server's base URL.
func baseConfig(cfg *rest.Config) *rest.Config {
	base := rest.CopyConfig(cfg)
	base.Host = strings.TrimSuffix(base.Host, "/")
	if i := strings.Index(base.Host, "/clusters/"); i >= 0 {
		base.Host = base.Host[:i]
	}
	return base
}

// configFor copies the base config with requests going to cluster (a
// logical cluster name or a workspace path).
func (p *Provider) configFor(cluster logicalcluster.Path) *rest.Config {
	cfg := rest.CopyConfig(p.base)
	cfg.Host += cluster.RequestPath()
	return cfg
}
