package spoke

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// member is one graph served on one cluster: the spoke runtime's driver of
// an instance engine (package instance) whose every node lives in the
// instances' own cluster. Its context ends when the cluster is disengaged,
// the graph stopped or replaced, or the Runtime stopped; then its event
// handlers are removed and its requests dropped.
//
// What the engine does not do, the member does, in the files named after
// each part:
//
//	watch.go            watches: the instance watch, and the health of the instance kind
//	handlers.go         what the instance watch's events do
//	instance_heads.go   instanceHeads: what the metadata-only instance watch showed, started
//	                    by the first large instance (instance_size.go)
//	states.go           instanceStates: each instance's state, for the gauge and the slots
//	counts.go           the instance tally behind Runtime.Counts
//	crd.go              crdFollower: the instance watch back soon after the CRD is re-created
//	reconcile.go        reconciler: reads the instance, then sync.go (a live instance) or
//	                    the engine's deletion and release
//	cluster_values.go   the cluster variable of the graph's expressions
//
// The parts that hold state have a lock of their own and call no other
// part while they hold it. The member itself keeps what every part needs:
// its cluster, context, logger, the engine, and calls bounded by
// Options.CallTimeout (isolation.go).
type member struct {
	c       *controller
	g       *graph.Graph
	cluster multicluster.ClusterName
	cl      *instance.Cluster
	log     logr.Logger

	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{} // closed once the instance watch runs

	// engine evaluates, writes, prunes, deletes and collects the graph's
	// instances on the cluster.
	engine *instance.Engine

	mu       sync.Mutex
	cleanups []func()

	watches *watches
	heads   *instanceHeads
	states  *instanceStates
	// tally counts the instances the instance cache holds (counts.go).
	tally atomic.Pointer[instanceTally]
	crd   *crdFollower
	// labels and values are the cluster labels and values last seen
	// (cluster_values.go).
	labels labelsMemory
	values valuesMemory

	reconciler reconciler
}

func newMember(c *controller, e *engagement) *member {
	ctx, cancel := context.WithCancel(e.ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	m := &member{
		c:       c,
		g:       c.g,
		cluster: e.name,
		cl:      e.cl,
		log:     c.log.WithValues("cluster", e.name.String()),
		ctx:     ctx,
		cancel:  cancel,
		ready:   make(chan struct{}),
		heads:   newInstanceHeads(),
		states:  newInstanceStates(ctx, c.g.Name, e.name.String()),
	}
	m.engine = instance.New(instance.Config{
		Graph:              c.g,
		Options:            c.opts.Options,
		Home:               e.cl,
		Context:            ctx,
		Enqueue:            m.enqueue,
		DeletionPoll:       c.opts.DeletionPoll,
		RetryBase:          c.opts.GateRetry,
		Defaults:           c.defaults,
		Reads:              c.reads,
		InstancesListed:    m.instancesListed,
		Released:           func() bool { return c.v.Removal == RemovalRelease },
		WatchHealthChanged: func() { m.requeueAll("a watch's health changed") },
	})
	m.watches = newWatches(m)
	m.crd = &crdFollower{m: m}
	m.reconciler = reconciler{m}
	m.cleanups = append(m.cleanups, func() { stop() }, m.engine.Stop)
	return m
}

// start passes the gate and starts the instance watch, retrying both with
// backoff until they succeed or the member ends.
func (m *member) start() {
	delay := m.c.opts.GateRetry
	for m.ctx.Err() == nil {
		err := m.open()
		if err == nil {
			close(m.ready)
			m.log.V(1).Info("serving graph on cluster")
			return
		}
		m.log.V(1).Info("graph not served on cluster yet", "reason", err.Error(), "retry", delay)
		select {
		case <-m.ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, m.c.opts.GateRetryMax)
	}
}

func (m *member) open() error {
	if gate := m.c.opts.Gate; gate != nil {
		if err := gate(m.ctx, m.cluster, m.c.v); err != nil {
			return err
		}
	}
	m.rememberClusterValues() // cluster_values.go
	inst := &unstructured.Unstructured{}
	inst.SetGroupVersionKind(m.g.Instance.GVK)
	if err := m.watches.instances(inst, m.newInstanceHandler()); err != nil {
		return err
	}
	if m.c.opts.InstanceCatchUp > 0 && m.c.opts.InstanceHeadsAbove < 0 {
		// Always on; else the first large instance starts it (weigh).
		if err := m.watches.watchHeads(); err != nil {
			return err
		}
		m.heads.watched.Store(true)
	}
	m.crd.follow()
	if m.c.v.Removal != RemovalRelease && m.count().Total == 0 {
		// No reconcile will start the child watches here: look for
		// children of instances deleted while nothing watched.
		m.engine.FindOrphans(m.cl)
	}
	m.followClusterLabels() // cluster_values.go
	return nil
}

// instancesListed reports whether the instance watch runs with its initial
// list, and is not being replaced (crd.go): only then does an instance
// missing from it prove anything.
func (m *member) instancesListed() bool {
	select {
	case <-m.ready:
	default:
		return false
	}
	return !m.crd.busy()
}

// addCleanup registers f to run when the member ends; if it has ended
// already f runs at once.
func (m *member) addCleanup(f func()) {
	m.mu.Lock()
	if m.ctx.Err() == nil {
		m.cleanups = append(m.cleanups, f)
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	f()
}

func (m *member) cleanup() {
	m.mu.Lock()
	fs := m.cleanups
	m.cleanups = nil
	m.mu.Unlock()
	for _, f := range fs {
		f()
	}
	forgetClusterMetrics(m.g.Name, m.cluster.String())
}

func (m *member) enqueue(key types.NamespacedName) {
	m.c.queue.Add(mcreconcile.Request{ClusterName: m.cluster, Request: reconcileRequest(key)})
}

// enqueueAfter adds the instance to the queue after d (a scheduled resync:
// the queue keeps only the earliest time for one request).
func (m *member) enqueueAfter(key types.NamespacedName, d time.Duration) {
	m.c.queue.AddAfter(mcreconcile.Request{ClusterName: m.cluster, Request: reconcileRequest(key)}, d)
}

// forgetInstance drops everything remembered for an instance that is gone.
func (m *member) forgetInstance(key types.NamespacedName, uid types.UID) {
	m.engine.ForgetInstance(key, uid)
	m.states.set(key, "")
}

func keyOf(u *unstructured.Unstructured) types.NamespacedName {
	return types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
}

func reconcileRequest(key types.NamespacedName) reconcile.Request {
	return reconcile.Request{NamespacedName: key}
}
