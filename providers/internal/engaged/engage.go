package engaged

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/lazycluster"
	"github.com/fleetgraph/fleetgraph/providers/access"
)

// disengageTimeout bounds the wait for a disengaged cluster to stop.
const disengageTimeout = 30 * time.Second

// Access is a cluster as one object describes it.
type Access struct {
	// Config reaches the server; it comes from access.Safety (RESTConfig or
	// ClientConfig), so that every connection is checked.
	Config *rest.Config
	// Hash identifies the description: a cluster engaged from the same
	// hash is kept (Refresh), another one replaces it.
	Hash string
	// Labels are the cluster's labels.
	Labels map[string]string
}

// Connect checks that the server of a answers, creates the cluster and
// engages it as name, in place of any previous engagement of that name,
// and reports the outcome on obj. An unreachable server returns an error,
// for the caller's backoff; a server another cluster holds is looked at
// again after DuplicateRetry; every other problem waits for obj to change.
func (c *Clusters) Connect(ctx context.Context, obj client.Object, name multicluster.ClusterName, a Access) (ctrl.Result, error) {
	if holder, ok := c.servers.claim(serverIdentity(a.Config), name); !ok {
		c.Fail(obj, name, access.ReasonDuplicateServer,
			fmt.Errorf("%w: its server is engaged already as cluster %q", access.ErrDuplicateServer, holder))
		return ctrl.Result{RequeueAfter: DuplicateRetry}, nil // until the other object goes
	}
	rc := c.withLimits(a.Config)
	if err := access.Probe(ctx, rc, c.opts.ConnectTimeout); err != nil {
		c.Disengage(name)
		if cause := errors.Unwrap(err); cause != nil {
			c.logFor(obj, name).V(1).Info("Contacting the server failed", "cause", cause.Error())
		}
		if errors.Is(err, access.ErrRefusedAddress) {
			c.Report(obj, name, access.ReasonUnsafeKubeconfig, err) // waits for obj to change
			return ctrl.Result{}, nil
		}
		c.Report(obj, name, access.ReasonUnreachable, err)
		return ctrl.Result{}, fmt.Errorf("cluster %q is not reachable (will retry): %w", name, err)
	}
	tc, err := c.newCluster(rc)
	if err != nil {
		c.Report(obj, name, access.ReasonEngageFailed, err)
		return ctrl.Result{}, nil
	}
	e := &engagement{hash: a.Hash, labels: a.Labels, tc: tc}
	tc.stopped = func() { c.dropIfCurrent(name, tc) }
	if err := c.engage(name, e); err != nil {
		c.Report(obj, name, access.ReasonEngageFailed, err)
		return ctrl.Result{}, fmt.Errorf("engaging cluster %q: %w", name, err)
	}
	c.engaged(obj, name)
	return ctrl.Result{}, nil
}

// newCluster creates the cluster of rc, with an HTTP client of its own
// whose idle connections are closed when it stops. It is built and started
// only once the hub serves it (lazycluster): a replica holds every
// cluster of the fleet and serves its share.
func (c *Clusters) newCluster(rc *rest.Config) (*trackedCluster, error) {
	httpClient, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot build an HTTP client", access.ErrInvalidKubeconfig)
	}
	opts := append([]cluster.Option{func(o *cluster.Options) { o.HTTPClient = httpClient }, cacheopts.TrimCache, cacheopts.ReportWatchErrors},
		c.opts.ClusterOptions...)
	cl, err := lazycluster.New(rc, opts...)
	if err != nil {
		return nil, err
	}
	return &trackedCluster{Cluster: cl, http: httpClient, done: make(chan struct{})}, nil
}

// withLimits copies rc and applies the Options' rate limits where rc has
// none.
func (c *Clusters) withLimits(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	if rc.QPS == 0 {
		rc.QPS = c.opts.QPS
	}
	if rc.Burst == 0 {
		rc.Burst = c.opts.Burst
	}
	return rc
}

// engage registers e under name, replacing (and first stopping) any
// previous engagement of that name, then starts, syncs and engages it. The
// name stays registered throughout, so that a rotation never looks like a
// departure to ClusterNames.
func (c *Clusters) engage(name multicluster.ClusterName, e *engagement) error {
	c.lock.Lock()
	old := c.byName[name]
	c.gen++
	e.key = multicluster.ClusterName(fmt.Sprintf("%s#%d", name, c.gen))
	c.byName[name] = e
	c.lock.Unlock()
	if old != nil {
		c.stop(name, old)
	}
	if err := c.clusters.Add(c.ctx, e.key, e.tc, renamed{aware: c.aware, name: name}); err != nil {
		c.dropIfCurrent(name, e.tc)
		c.stop(name, e)
		return err
	}
	return nil
}

// Disengage cancels the engagement of the cluster called name, if any, and
// waits until it has stopped.
func (c *Clusters) Disengage(name multicluster.ClusterName) {
	c.lock.Lock()
	e, ok := c.byName[name]
	if ok {
		delete(c.byName, name)
	}
	c.lock.Unlock()
	if ok {
		c.stop(name, e)
	}
}

// stop cancels e's context, waits until its cluster has stopped and closes
// its idle connections.
func (c *Clusters) stop(name multicluster.ClusterName, e *engagement) {
	c.clusters.Remove(e.key)
	select {
	case <-e.tc.done:
	case <-time.After(disengageTimeout):
		c.log.Info("Cluster did not stop in time after disengaging", "cluster", name)
	}
	utilnet.CloseIdleConnectionsFor(e.tc.http.Transport)
	c.log.Info("Disengaged cluster", "cluster", name)
}

// dropIfCurrent forgets the cluster called name if tc is still its
// engagement: tc stopped on its own (its cache failed), not because it was
// disengaged or replaced.
func (c *Clusters) dropIfCurrent(name multicluster.ClusterName, tc *trackedCluster) {
	c.lock.Lock()
	defer c.lock.Unlock()
	if e, ok := c.byName[name]; ok && e.tc == tc {
		delete(c.byName, name)
		c.log.Info("Cluster stopped; it is engaged again when its object changes", "cluster", name)
	}
}

// trackedCluster is a cluster whose Start reports when it has returned.
type trackedCluster struct {
	cluster.Cluster
	http    *http.Client
	done    chan struct{}
	stopped func()
}

// Start runs the cluster until ctx is done, then calls stopped and closes
// done.
func (c *trackedCluster) Start(ctx context.Context) error {
	defer close(c.done)
	defer c.stopped()
	return c.Cluster.Start(ctx)
}

// Release releases the cluster (a lazycluster.Cluster) when the hub's
// coordinator stops serving it: what serving it built stops until it is
// served again.
func (c *trackedCluster) Release() {
	if r, ok := c.Cluster.(interface{ Release() }); ok {
		r.Release()
	}
}

// Acquire has the cluster (a lazycluster.Cluster) build and run again at
// its next use, when the hub's coordinator starts serving it.
func (c *trackedCluster) Acquire() {
	if a, ok := c.Cluster.(interface{ Acquire() }); ok {
		a.Acquire()
	}
}

// renamed engages clusters under their public name rather than their key.
type renamed struct {
	aware multicluster.Aware
	name  multicluster.ClusterName
}

func (r renamed) Engage(ctx context.Context, _ multicluster.ClusterName, cl cluster.Cluster) error {
	return r.aware.Engage(ctx, r.name, cl)
}
