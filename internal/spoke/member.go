package spoke

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// member is one graph served on one cluster. Its context ends when the
// cluster is disengaged, the graph stopped or replaced, or the Runtime
// stopped; then its event handlers are removed and its requests dropped.
//
// It is made of parts, one concern each, each in the files named after it:
//
//	watch.go            watches: each watch started once, the cluster's shared handlers
//	                    (shared_handlers.go), watch health (watch_errors.go)
//	handlers.go         what the watches' events do
//	instance_memory.go  instanceMemory: UIDs, what the watch delivered, our own writes
//	instance_heads.go   instanceHeads: what the metadata-only instance watch showed, started
//	                    by the first large instance (instance_size.go)
//	states.go           instanceStates: each instance's state, for the gauge and the slots
//	counts.go           the instance tally behind Runtime.Counts
//	crd.go              crdFollower: the instance watch back soon after the CRD is re-created
//	apply_memory.go     applyMemory: what was applied (answers compressed, observed.go)
//	owned.go            ownedIndex: children by owning instance
//	external_refs.go    externalRefs: each instance's references, their scoped watches
//	                    (external_watch.go)
//	resync.go           resyncSchedule: each instance's periodic full resync
//	orphans.go          orphanage: children whose instance is gone (orphans_collect.go)
//	reconcile.go        reconciler: sync.go, finalize.go, release.go, inventory.go
//	evaluate.go         evaluator: the graph walked for one instance (external.go)
//	apply.go            applier: one child written, checked first (ownership.go, confine.go)
//	status.go           instanceWriter: status (conditions.go), finalizer and child kinds
//	                    (instance_writes.go)
//
// The parts that hold state have a lock of their own and call no other
// part while they hold it, except externalRefs, which drops a stopped
// scope's start from watches. The member itself keeps what every part
// needs: its cluster, context, logger, the graph's kinds, calls bounded by
// Options.CallTimeout (isolation.go), and the instance defaults
// (defaults.go).
type member struct {
	c       *controller
	g       *graph.Graph
	cluster multicluster.ClusterName
	cl      cluster.Cluster
	log     logr.Logger
	// recorder writes Kubernetes Events on instances, in their cluster.
	recorder events.EventRecorder

	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{} // closed once the instance watch runs

	// kinds are the kinds of the graph's own children (contract.GraphKinds).
	kinds kindSet
	// graphLabel is the value of contract.LabelGraph on our children.
	graphLabel string
	// defaults is the controller's (shared, read-only) instance schema
	// for defaulting (defaults.go).
	defaults *structuralschema.Structural

	mu       sync.Mutex
	cleanups []func()

	watches   *watches
	instances *instanceMemory
	heads     *instanceHeads
	states    *instanceStates
	// tally counts the instances the instance cache holds (counts.go).
	tally   atomic.Pointer[instanceTally]
	crd     *crdFollower
	memory  *applyMemory
	owned   *ownedIndex
	refs    *externalRefs
	resync  *resyncSchedule
	orphans *orphanage
	// labels and values are the cluster labels and values last seen
	// (cluster_values.go).
	labels labelsMemory
	values valuesMemory

	reconciler reconciler
	evaluator  evaluator
	applier    applier
	writer     instanceWriter
}

func newMember(c *controller, e *engagement) *member {
	ctx, cancel := context.WithCancel(e.ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	m := &member{
		c:          c,
		g:          c.g,
		cluster:    e.name,
		cl:         e.cl,
		defaults:   c.defaults,
		recorder:   e.cl.GetEventRecorder("fleetgraph"),
		log:        c.log.WithValues("cluster", e.name.String()),
		ctx:        ctx,
		cancel:     cancel,
		ready:      make(chan struct{}),
		kinds:      contract.GraphKinds(c.g),
		graphLabel: contract.LabelValue(c.g.Name),
		instances:  newInstanceMemory(),
		heads:      newInstanceHeads(),
		states:     newInstanceStates(ctx, c.g.Name, e.name.String()),
		memory:     newApplyMemory(),
		owned:      newOwnedIndex(),
		resync:     newResyncSchedule(c.opts.Resync),
	}
	m.watches = newWatches(m, e.fan)
	m.crd = &crdFollower{m: m}
	m.refs = newExternalRefs(m)
	m.orphans = newOrphanage(m)
	m.reconciler = reconciler{m}
	m.evaluator = evaluator{m}
	m.applier = applier{m}
	m.writer = instanceWriter{m}
	m.cleanups = append(m.cleanups, func() { stop() }, m.orphans.stop)
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
	m.orphans.start()
	m.followClusterLabels() // cluster_values.go
	return nil
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

// observeInstance notes an instance the instance watch delivered; a UID
// whose name a new instance took is suspected of leaving orphans.
func (m *member) observeInstance(u *unstructured.Unstructured) {
	if replaced := m.instances.observe(u); replaced != "" {
		m.orphans.suspect(replaced)
	}
}

// recordChild notes in the owned index that key, the object uid, belongs
// to owner, rendered by node. A child of an owner the instance watch does
// not hold is suspected of being an orphan (orphans.go).
func (m *member) recordChild(key childKey, owner types.UID, node string, uid types.UID) {
	if owner == "" {
		return
	}
	m.owned.record(key, owner, node, uid)
	if _, live := m.instances.instanceOf(owner); !live {
		m.orphans.suspect(owner)
	}
}

// dropChild forgets a child that is gone; an orphan collection waiting
// for it may go on.
func (m *member) dropChild(key childKey) {
	if owner, ok := m.owned.drop(key); ok {
		m.orphans.childGone(owner)
	}
}

// forgetInstance drops everything remembered for an instance that is gone,
// by uid and by the UID the watch last delivered under its name. Its
// children's apply memory is found through the owned index, not by a scan,
// so that deleting many instances costs each only its own children.
func (m *member) forgetInstance(key types.NamespacedName, uid types.UID) {
	for _, u := range m.instances.forget(key, uid) {
		m.owned.forgetListed(u)
		m.memory.forgetOwned(key, m.owned.keysOf(u))
	}
	m.refs.forget(key)
	m.resync.forget(key)
	m.states.set(key, "")
}

// childMeta reads a child's metadata: from the cache for the graph's kinds
// (watched), live for a kind the instance listed besides. Nil if the
// object does not exist.
func (m *member) childMeta(e InventoryEntry) (*metav1.PartialObjectMetadata, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(e.gvk())
	ctx, cancel := m.callCtx()
	defer cancel()
	key := types.NamespacedName{Namespace: e.Namespace, Name: e.Name}
	var err error
	if m.kinds.has(e.gvk()) {
		err = m.cl.GetCache().Get(ctx, key, obj)
	} else {
		err = m.cl.GetAPIReader().Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) || isNoMatch(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", e, err)
	}
	obj.SetGroupVersionKind(e.gvk())
	return obj, nil
}

// namespaced reports whether the cluster serves gvk namespaced.
func (m *member) namespaced(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := m.cl.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("kind %s is not served: %w", gvk, err)
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func keyOf(u *unstructured.Unstructured) types.NamespacedName {
	return types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
}

func reconcileRequest(key types.NamespacedName) reconcile.Request {
	return reconcile.Request{NamespacedName: key}
}

func isNoMatch(err error) bool { return err != nil && meta.IsNoMatchError(err) }
