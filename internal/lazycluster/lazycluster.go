package lazycluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

var (
	_ cluster.Cluster = &Cluster{}
	_ cache.Cache     = &lazyCache{}
)

// Cluster is a cluster.Cluster built by cluster.New(config, opts...) at
// its first use (see the package documentation).
type Cluster struct {
	config *rest.Config
	opts   []cluster.Option
	http   *http.Client
	cache  *lazyCache

	mu  sync.Mutex
	err error
	// indexes are every field index asked for, added to each build.
	indexes []index
	// startCtx is Start's context once Start is called.
	startCtx context.Context
	// gen is the current build, or the one to come.
	gen *generation
	// released is set by Release and cleared by Acquire: a use between
	// them comes from whoever still held the cluster when its serving
	// ended, and gets a detached build (see use).
	released bool
}

// generation is one build of the cluster, from its first use until it is
// released or stops.
type generation struct {
	built cluster.Cluster // nil until the first use
	wake  chan struct{}   // closed at the first use
	woken bool
	// running is closed once the built cluster's cache has started, or
	// its Start has returned.
	running     chan struct{}
	runningOnce sync.Once
	// cancel stops the built cluster once Start runs it.
	cancel   context.CancelFunc
	released bool
}

func newGeneration() *generation {
	return &generation{wake: make(chan struct{}), running: make(chan struct{})}
}

// ran marks g's cache as started (or g as stopped).
func (g *generation) ran() { g.runningOnce.Do(func() { close(g.running) }) }

// index is a field index asked for before the cluster was built.
type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

// New returns a Cluster that calls cluster.New(config, opts...) at its
// first use. config is not copied: give it one of the cluster's own. Its
// HTTP client is opts' or, as cluster.New would make it, one for config,
// made now.
//
// So that a config or option cluster.New refuses is refused here, as a
// cluster built at once would be, New builds one and drops it (building
// starts nothing; the garbage collector takes it). A later build that
// fails all the same, which only options that change their answer can
// cause, panics at the first use with that error.
func New(config *rest.Config, opts ...cluster.Option) (*Cluster, error) {
	if config == nil {
		return nil, errNoConfig
	}
	var o cluster.Options
	for _, opt := range opts {
		opt(&o)
	}
	hc := o.HTTPClient
	if hc == nil {
		// Made here rather than by cluster.New, so that the HTTP client
		// (what a health probe needs) is known before the build.
		var err error
		if hc, err = rest.HTTPClientFor(config); err != nil {
			return nil, fmt.Errorf("HTTP client for %s: %w", config.Host, err)
		}
		opts = append(slices.Clip(opts), func(o *cluster.Options) { o.HTTPClient = hc })
	}
	if _, err := cluster.New(config, opts...); err != nil {
		return nil, err
	}
	c := &Cluster{config: config, opts: opts, http: hc, gen: newGeneration()}
	c.cache = &lazyCache{c: c}
	return c, nil
}

// ErrReleased is what a released cluster's cache answers a read or a
// request for an informer with, until the cluster is acquired again. It
// is a controller-runtime cache.ErrCacheNotStarted, as what it says is
// the same: this cache holds nothing to read.
var ErrReleased error = releasedError{}

type releasedError struct{}

func (releasedError) Error() string {
	return "the cluster is released: this replica does not serve it"
}

// As makes errors.As find a *cache.ErrCacheNotStarted in ErrReleased.
func (releasedError) As(target any) bool {
	if t, ok := target.(**cache.ErrCacheNotStarted); ok {
		*t = &cache.ErrCacheNotStarted{}
		return true
	}
	return false
}

// errNoConfig: New was given no config.
var errNoConfig = errors.New("lazycluster: no config")

// buildLocked builds the current generation if it is not built.
func (c *Cluster) buildLocked() error {
	if c.gen.built != nil || c.err != nil {
		return c.err
	}
	built, err := cluster.New(c.config, c.opts...)
	if err != nil {
		c.err = fmt.Errorf("building cluster for %s: %w", c.config.Host, err)
		return c.err
	}
	for _, ix := range c.indexes {
		if err := built.GetFieldIndexer().IndexField(context.Background(), ix.obj, ix.field, ix.extract); err != nil {
			c.err = fmt.Errorf("indexing %s on cluster for %s: %w", ix.field, c.config.Host, err)
			return c.err
		}
	}
	c.gen.built = built
	return nil
}

// Used reports whether the cluster is built now.
func (c *Cluster) Used() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen.built != nil
}

// use builds the cluster, wakes Start, and, when Start has been called,
// waits until the built cluster's cache has started, so that a read right
// after finds it running. Between Release and Acquire it returns a
// detached build instead.
func (c *Cluster) use() cluster.Cluster {
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		return c.detached()
	}
	if err := c.buildLocked(); err != nil {
		c.mu.Unlock()
		panic(err) // see New
	}
	g := c.gen
	if !g.woken {
		g.woken = true
		close(g.wake)
	}
	ctx := c.startCtx
	c.mu.Unlock()
	if ctx != nil {
		select {
		case <-g.running:
		case <-ctx.Done():
		}
	}
	return g.built
}

// detached builds the cluster without keeping or starting it, for a
// getter called between Release and Acquire: a reconcile still in flight
// when its replica handed the cluster over. Kept and started, such a
// build would run the cluster's informers on a replica that no longer
// serves it until it served the cluster again. Detached, its cache is
// never started (a cached read fails with controller-runtime's
// ErrCacheNotStarted) and it is garbage once its caller lets go; writes
// and direct reads reach the API server as they would through the build
// the caller held before. The cluster's own cache builds nothing then
// (ErrReleased).
func (c *Cluster) detached() cluster.Cluster {
	built, err := cluster.New(c.config, c.opts...)
	if err != nil {
		panic(fmt.Errorf("building cluster for %s: %w", c.config.Host, err)) // see New
	}
	c.mu.Lock()
	indexes := slices.Clone(c.indexes)
	c.mu.Unlock()
	for _, ix := range indexes {
		_ = built.GetFieldIndexer().IndexField(context.Background(), ix.obj, ix.field, ix.extract)
	}
	return built
}

// Acquire ends what Release began: the next use builds and runs the
// cluster again. The hub's sharded coordinator calls it when its replica
// starts serving the cluster, before anything is engaged with it. A
// cluster never released needs no Acquire.
func (c *Cluster) Acquire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = false
}

// Start runs the cluster until ctx is done: each build from its first use
// until it is released (then it waits for the next use) or stops. It
// returns nil once ctx is done, and the built cluster's error if it
// stopped on its own.
func (c *Cluster) Start(ctx context.Context) error {
	c.mu.Lock()
	c.startCtx = ctx
	c.mu.Unlock()
	for {
		c.mu.Lock()
		g := c.gen
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-g.wake:
		}
		err := c.run(ctx, g)
		if ctx.Err() != nil {
			return nil
		}
		c.mu.Lock()
		released := g.released
		c.mu.Unlock()
		if !released {
			return err
		}
	}
}

// run runs g's cluster until ctx is done or g is released.
func (c *Cluster) run(ctx context.Context, g *generation) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.mu.Lock()
	g.cancel = cancel
	if g.released {
		cancel()
	}
	c.mu.Unlock()
	defer g.ran()
	go func() {
		if g.built.GetCache().WaitForCacheSync(runCtx) {
			g.ran()
		}
	}()
	return g.built.Start(runCtx)
}

// Release stops the built cluster, if any, and forgets it: the cluster
// costs again what an unused one does, and its next use builds it anew
// (with the same indexes). It returns at once; the old build stops in the
// background, and whoever still holds its client or cache finds its
// informers stopped. Until Acquire, a use gets a build that is neither
// kept nor started (see detached). The hub's sharded coordinator calls it
// when its replica stops serving the cluster, before it could serve it
// again.
func (c *Cluster) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = true
	g := c.gen
	if g.built == nil {
		return
	}
	g.released = true
	c.gen = newGeneration()
	if g.cancel != nil {
		g.cancel() // else run, if it picks g up yet, stops it at once
	}
}

// GetConfig implements cluster.Cluster without building the cluster.
func (c *Cluster) GetConfig() *rest.Config { return c.config }

// GetCache implements cluster.Cluster: a cache that builds the cluster
// when it is read or asked for an informer.
func (c *Cluster) GetCache() cache.Cache { return c.cache }

// GetFieldIndexer implements cluster.Cluster: indexes asked for before
// the cluster is built are added when it is.
func (c *Cluster) GetFieldIndexer() client.FieldIndexer { return c.cache }

// GetHTTPClient implements cluster.Cluster without building the cluster:
// the hub's health probe of a cluster it does not serve needs only this.
func (c *Cluster) GetHTTPClient() *http.Client { return c.http }

// GetScheme implements cluster.Cluster.
func (c *Cluster) GetScheme() *runtime.Scheme { return c.use().GetScheme() }

// GetClient implements cluster.Cluster.
func (c *Cluster) GetClient() client.Client { return c.use().GetClient() }

// GetRESTMapper implements cluster.Cluster.
func (c *Cluster) GetRESTMapper() meta.RESTMapper { return c.use().GetRESTMapper() }

// GetAPIReader implements cluster.Cluster.
func (c *Cluster) GetAPIReader() client.Reader { return c.use().GetAPIReader() }

// GetEventRecorderFor implements cluster.Cluster.
func (c *Cluster) GetEventRecorderFor(name string) record.EventRecorder {
	return c.use().GetEventRecorderFor(name) //nolint:staticcheck // the interface's
}

// GetEventRecorder implements cluster.Cluster.
func (c *Cluster) GetEventRecorder(name string) events.EventRecorder {
	return c.use().GetEventRecorder(name)
}
