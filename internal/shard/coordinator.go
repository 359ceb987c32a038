package shard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

var _ mcmanager.Coordinator = &Coordinator{}

// Options configures a replica's share of the fleet. Every replica of one
// hub must use the same Namespace, Prefix and timings.
type Options struct {
	// ID names this replica among its peers; it must be unique and stable
	// for the replica's life. Defaults to the host name (a pod's name).
	ID string
	// Weight is this replica's relative capacity: it serves about
	// Weight/ΣWeights of the clusters. Defaults to 1.
	Weight uint32
	// Namespace on the hub cluster holds the peer Leases
	// (<Prefix>-peer-<id>). Defaults to "kube-system".
	Namespace string
	// Prefix starts every Lease name. Defaults to "mcr", as
	// multicluster-runtime's own registry uses.
	Prefix string
	// LeaseDuration is how long a peer Lease stays valid without renewal:
	// the others take a dead replica's clusters over after it. Defaults to
	// 20 seconds.
	LeaseDuration time.Duration
	// RenewInterval bounds how long a replica goes without renewing its
	// Lease; one that could not renew for LeaseDuration-RenewInterval
	// stops serving, before the others may start. Must be under
	// LeaseDuration (so replicas' clocks must agree to well within it).
	// Defaults to LeaseDuration/3.
	RenewInterval time.Duration
	// Probe is how often the coordinator decides which clusters this
	// replica serves: each decision renews the Lease and re-lists the
	// peers. Decisions run every min(Probe, RenewInterval). Defaults to 5
	// seconds.
	Probe time.Duration
	// Logger defaults to none.
	Logger logr.Logger
}

func (o Options) withDefaults() Options {
	if o.ID == "" {
		o.ID, _ = os.Hostname()
	}
	o.Weight = max(o.Weight, 1)
	if o.Namespace == "" {
		o.Namespace = "kube-system"
	}
	if o.Prefix == "" {
		o.Prefix = "mcr"
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 20 * time.Second
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = o.LeaseDuration / 3
	}
	if o.Probe == 0 {
		o.Probe = 5 * time.Second
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	return o
}

// round is the interval between two decisions.
func (o Options) round() time.Duration { return min(o.Probe, o.RenewInterval) }

// TakeoverBound is how long after a replica dies its clusters may wait
// for another: its Lease expires, and a peer's next decision (one round
// later at most, plus that round's own requests) takes them over. Two
// rounds leave one for the requests.
func (o Options) TakeoverBound() time.Duration {
	o = o.withDefaults()
	return o.LeaseDuration + 2*o.round()
}

// Coordinator decides which clusters this replica serves. See the package
// documentation for why it is safe.
type Coordinator struct {
	o      Options
	self   sharder.PeerInfo
	leases *leases

	mu     sync.Mutex
	awares []multicluster.Aware
	// members are the clusters the provider engaged, served or not.
	members map[multicluster.ClusterName]*member
	// published is the view this replica's Lease holds since its last
	// successful write; pending, the view it stops clusters for before
	// writing it. Nil before the first write and after fencing.
	published, pending view
	// peers are the other live replicas as listed after the last write;
	// listed is false when that list failed.
	peers  []peer
	listed bool
	// seen is the last round's list after its write, for the next view;
	// nil once used, or when that list failed (the next round lists).
	seen []peer
	// validUntil is when this replica stops serving unless it renews.
	validUntil time.Time
	// writes counts the successful writes: a replica starts nothing
	// before its second, so that replicas starting together see each
	// other first rather than each taking the fleet and giving most back.
	writes int
	fence  *time.Timer
}

// member is a cluster the provider engaged.
type member struct {
	name   multicluster.ClusterName
	cl     cluster.Cluster
	parent context.Context
	// ctx and cancel are this replica's serving of the cluster; nil when
	// not serving.
	ctx    context.Context
	cancel context.CancelFunc
}

// stop ends this replica's serving of m, if it serves it, and has the
// cluster give back what serving it built, if it can (releaser).
func (m *member) stop() {
	if m.cancel != nil {
		m.cancel()
		m.ctx, m.cancel = nil, nil
		if r, ok := m.cl.(releaser); ok {
			r.Release()
		}
	}
}

// releaser is a cluster that can stop and forget what its use built
// (its clients, cache and informers) until it is used again, as
// fleetgraph's providers' clusters can (internal/lazycluster): a replica
// that hands a cluster over, at a cold start or when a peer joins, keeps
// nothing of it running. Release must not block.
type releaser interface {
	Release()
}

// acquirer is a releaser's other half: a cluster that, once released,
// builds nothing that it keeps until its serving starts again, so that
// whoever still held it from the old serving (a reconcile in flight) does
// not start its informers again on a replica that no longer serves it.
// Acquire must not block.
type acquirer interface {
	Acquire()
}

// NewCoordinator returns the coordinator of replica opts.ID whose Leases
// live on the hub cluster c (a direct client: the list after each write
// must be read from the API server).
func NewCoordinator(c client.Client, opts Options) *Coordinator {
	o := opts.withDefaults()
	self := sharder.PeerInfo{ID: PeerID(o.ID), Weight: o.Weight}
	return &Coordinator{
		o: o, self: self,
		leases:  &leases{c: c, ns: o.Namespace, prefix: o.Prefix + "-peer", self: self, ttl: o.LeaseDuration},
		members: map[multicluster.ClusterName]*member{},
	}
}

// AddAware implements mcmanager.Coordinator.
func (c *Coordinator) AddAware(a multicluster.Aware) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.awares = append(c.awares, a)
}

// Engage implements mcmanager.Coordinator: the cluster is served at once
// if this replica's last decision allows it, else at a later one.
func (c *Coordinator) Engage(parent context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	if err := parent.Err(); err != nil {
		return err
	}
	m := &member{name: name, cl: cl, parent: parent}
	c.mu.Lock()
	if old := c.members[name]; old != nil {
		old.stop()
	}
	c.members[name] = m
	ctx := c.start(m)
	c.mu.Unlock()
	if ctx != nil {
		go c.serve(ctx, m)
	}
	context.AfterFunc(parent, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.members[name] == m {
			m.stop()
			delete(c.members, name)
		}
	})
	return nil
}

// Runnable implements mcmanager.Coordinator: the decision loop.
func (c *Coordinator) Runnable() manager.Runnable {
	return manager.RunnableFunc(c.run)
}

// ErrLeaseTimings: RenewInterval is not under LeaseDuration (as the Lease
// holds it, in whole seconds), so a replica could never serve.
var ErrLeaseTimings = errors.New("the renew interval must be under the lease duration")

func (c *Coordinator) run(ctx context.Context) error {
	if c.o.RenewInterval >= c.leases.written() {
		return fmt.Errorf("%w: renew %s, lease %s", ErrLeaseTimings, c.o.RenewInterval, c.leases.written())
	}
	c.o.Logger.Info("sharding starts", "peer", c.self.ID)
	c.mu.Lock()
	c.fence = time.AfterFunc(time.Hour, c.fenceIfExpired)
	c.fence.Stop()
	c.mu.Unlock()
	t := time.NewTicker(c.o.round())
	defer t.Stop()
	again := false
	for {
		// A decision that saw the peers change decides once more at once,
		// so that a view converges in one round rather than two; never
		// twice in a row, whatever the peers do.
		again = c.decide(ctx) && !again
		if again && ctx.Err() == nil {
			continue
		}
		select {
		case <-ctx.Done():
			c.leave()
			return nil
		case <-t.C:
		}
	}
}

// leave stops serving every cluster, then expires this replica's Lease so
// that the others take them over at their next decision.
func (c *Coordinator) leave() {
	c.mu.Lock()
	c.fence.Stop()
	c.stopAll()
	// Nothing starts after this, not even a cluster engaged late: the
	// Lease is about to say this replica is gone.
	c.published, c.pending, c.listed = nil, nil, false
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.o.RenewInterval)
	defer cancel()
	if err := c.leases.expire(ctx); err != nil {
		c.o.Logger.Info("could not expire this replica's Lease; the others take its clusters over once it expires", "reason", err.Error())
	}
	c.o.Logger.Info("sharding stopped", "peer", c.self.ID)
}
