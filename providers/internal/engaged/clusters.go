// Package engaged keeps the clusters that a provider engages from objects
// on the hub (kubeconfig Secrets, ClusterProfiles, Cluster API Clusters):
// it checks that a server answers, creates the cluster, waits for its cache
// and engages it under its public name; it replaces a cluster whose
// description changed without a gap in ClusterNames, disengages one whose
// object went, and answers the hub's questions about them (labels,
// registration, why a cluster is not engaged). Providers only turn their
// objects into an Access and report what is wrong with them.
//
// multicluster-runtime's pkg/clusters removes a cluster by name when that
// cluster's Start returns, which would also remove a replacement engaged
// under the same name meanwhile; so each engagement is registered under an
// internal key of its own and engaged under the public name.
package engaged

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/clusters"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// Options configure Clusters. Every field is required: the providers fill
// their own documented defaults in.
type Options struct {
	// QPS and Burst are each cluster's client rate limits where its
	// configuration leaves them zero.
	QPS   float32
	Burst int
	// ConnectTimeout bounds the check, before engaging, that the server
	// answers.
	ConnectTimeout time.Duration
	// CacheSyncTimeout bounds the wait for a new cluster's cache.
	CacheSyncTimeout time.Duration
	// ClusterOptions apply to every cluster created, after the
	// provider's own.
	ClusterOptions []cluster.Option
	// Log is the provider's named logger.
	Log logr.Logger
}

// Clusters are the clusters one provider engaged, by name. All methods are
// safe for concurrent use.
type Clusters struct {
	opts Options
	log  logr.Logger

	// clusters starts, syncs, engages and removes clusters, keyed by an
	// internal key per engagement (name and generation).
	clusters clusters.Clusters[*trackedCluster]

	started chan struct{} // closed by Start once ctx and aware are set
	ctx     context.Context
	aware   multicluster.Aware

	recorder events.EventRecorder // set by SetRecorder before Start

	claims   claims   // which object holds which cluster name
	servers  servers  // which cluster name holds which API server
	failures failures // why clusters are not engaged

	lock   sync.RWMutex
	gen    uint64
	byName map[multicluster.ClusterName]*engagement
	// relabelled are told of label changes (NotifyLabelsChanged); under
	// lock.
	relabelled []func(multicluster.ClusterName)
}

// engagement is one cluster engaged from one description.
type engagement struct {
	key    multicluster.ClusterName // key in Clusters.clusters
	hash   string
	labels map[string]string
	tc     *trackedCluster
}

// New returns empty Clusters.
func New(opts Options) *Clusters {
	c := &Clusters{
		opts:     opts,
		log:      opts.Log,
		clusters: clusters.New[*trackedCluster](),
		started:  make(chan struct{}),
		byName:   map[multicluster.ClusterName]*engagement{},
		claims:   claims{byName: map[multicluster.ClusterName]types.NamespacedName{}},
		servers:  servers{byServer: map[string]multicluster.ClusterName{}},
		failures: failures{byName: map[multicluster.ClusterName]string{}},
	}
	c.clusters.WaitCacheTimeout = opts.CacheSyncTimeout
	c.clusters.ErrorHandler = c.log.Error
	return c
}

// SetRecorder sets where Events about the objects are recorded. Call it
// once, before Start.
func (c *Clusters) SetRecorder(r events.EventRecorder) { c.recorder = r }

// Start is the provider's multicluster.ProviderRunnable Start: clusters
// are engaged with aware under contexts derived from ctx. It returns when
// ctx is done and every cluster has stopped.
func (c *Clusters) Start(ctx context.Context, aware multicluster.Aware) error {
	select {
	case <-c.started:
		return fmt.Errorf("provider already started")
	default:
	}
	c.ctx, c.aware = ctx, aware
	close(c.started)
	<-ctx.Done()
	c.lock.Lock()
	names := slices.Collect(maps.Keys(c.byName))
	c.lock.Unlock()
	for _, name := range names {
		c.Disengage(name)
	}
	return nil
}

// WaitStarted blocks until Start has been called or ctx is done.
func (c *Clusters) WaitStarted(ctx context.Context) error {
	select {
	case <-c.started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Get returns the engaged cluster called name, or an error wrapping
// multicluster.ErrClusterNotFound.
func (c *Clusters) Get(ctx context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	c.lock.RLock()
	e, ok := c.byName[name]
	c.lock.RUnlock()
	if !ok {
		return nil, fmt.Errorf("cluster %q: %w", name, multicluster.ErrClusterNotFound)
	}
	cl, err := c.clusters.GetTyped(ctx, e.key)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, multicluster.ErrClusterNotFound)
	}
	return cl, nil
}

// IndexField adds the index to every engaged cluster and to every cluster
// engaged later.
func (c *Clusters) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return c.clusters.IndexField(ctx, obj, field, extract)
}

// Registered reports whether an object names the cluster, engaged or not.
func (c *Clusters) Registered(name multicluster.ClusterName) bool {
	return c.claims.held(name)
}

// NameOf returns the cluster name the object called key holds.
func (c *Clusters) NameOf(key types.NamespacedName) (multicluster.ClusterName, bool) {
	return c.claims.nameOf(key)
}

// Engaged reports whether the cluster called name is engaged (or being
// engaged again with a new description).
func (c *Clusters) Engaged(name multicluster.ClusterName) bool {
	c.lock.RLock()
	defer c.lock.RUnlock()
	_, ok := c.byName[name]
	return ok
}

// ClusterNames returns the names of the clusters engaged or being engaged,
// sorted.
func (c *Clusters) ClusterNames() []multicluster.ClusterName {
	c.lock.RLock()
	defer c.lock.RUnlock()
	return slices.Sorted(maps.Keys(c.byName))
}

// Labels returns a copy of the labels of the engaged cluster called name,
// or nil.
func (c *Clusters) Labels(name multicluster.ClusterName) map[string]string {
	c.lock.RLock()
	defer c.lock.RUnlock()
	if e, ok := c.byName[name]; ok {
		return maps.Clone(e.labels)
	}
	return nil
}

// NotifyLabelsChanged registers f, called with a cluster's name after its
// labels changed (Refresh).
func (c *Clusters) NotifyLabelsChanged(f func(multicluster.ClusterName)) {
	c.lock.Lock()
	defer c.lock.Unlock()
	c.relabelled = append(c.relabelled, f)
}

// EngagementFailures returns, per cluster name, why the cluster is not
// engaged: the reason of the last Warning Event on its object and its
// message.
func (c *Clusters) EngagementFailures() map[multicluster.ClusterName]string {
	return c.failures.list()
}
