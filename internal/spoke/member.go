package spoke

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// member is one graph served on one cluster. Its context ends when the
// cluster is disengaged, the graph stopped or replaced, or the Runtime
// stopped; then its event handlers are removed and its requests dropped.
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

	mu       sync.Mutex
	cleanups []func()
	watches  map[any]*watch // watchKey, scopeKey
	children map[childKey]*childState
	owned    map[childKey]ownedChild
	byOwner  map[types.UID][]childKey  // owned.go
	kinds    []schema.GroupVersionKind // contract.GraphKinds(g)
	// graphLabel is the value of contract.LabelGraph on our children.
	graphLabel string
	owners     map[types.UID]types.NamespacedName
	refs       map[types.NamespacedName][]resolvedRef
	refIndex   map[refKey]map[types.NamespacedName]struct{} // see referrers
	scoped     map[scopeKey]*scoped                         // external_watch.go
	written    map[types.NamespacedName]*writtenInstance
	lastSeen   map[types.NamespacedName]seenInstance
	states     map[types.NamespacedName]string
	// tally counts the instances the instance cache holds (counts.go).
	tally atomic.Pointer[instanceTally]
	// orphans finds and deletes children whose instance is gone
	// (orphans.go).
	orphans  *orphanage
	resyncAt map[types.NamespacedName]time.Time
	// listed records, per instance UID, the kinds outside the graph that
	// were listed for its children (see extraKinds).
	listed map[types.UID]map[schema.GroupVersionKind]bool
	// crdUID is the UID of the graph's CRD as last seen (crd.go).
	crdUID types.UID
	// rewatching is set while the instance watch waits to be replaced
	// after the CRD went away (crd.go).
	rewatching bool
	// fan is the cluster's shared handlers (shared_handlers.go).
	fan *fanouts
	// defaults is the controller's (shared, read-only) instance schema
	// for defaulting.
	defaults *structuralschema.Structural

	// perNamespace counts states by namespace (made on first use); spans
	// is set while it holds more than one namespace. slots.go reads spans
	// under the controller's lock, which must never wait for mu.
	perNamespace map[string]int
	spans        atomic.Bool
}

// seenInstance is what the instance watch last delivered for a name.
type seenInstance struct {
	uid types.UID
	rv  string
}

func newMember(c *controller, e *engagement) *member {
	ctx, cancel := context.WithCancel(e.ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	m := &member{
		c:          c,
		g:          c.g,
		cluster:    e.name,
		cl:         e.cl,
		fan:        e.fan,
		defaults:   c.defaults,
		recorder:   e.cl.GetEventRecorder("fleetgraph"),
		log:        c.log.WithValues("cluster", e.name.String()),
		ctx:        ctx,
		cancel:     cancel,
		ready:      make(chan struct{}),
		watches:    map[any]*watch{},
		children:   map[childKey]*childState{},
		owned:      map[childKey]ownedChild{},
		byOwner:    map[types.UID][]childKey{},
		kinds:      contract.GraphKinds(c.g),
		graphLabel: contract.LabelValue(c.g.Name),
		owners:     map[types.UID]types.NamespacedName{},
		refs:       map[types.NamespacedName][]resolvedRef{},
		refIndex:   map[refKey]map[types.NamespacedName]struct{}{},
		scoped:     map[scopeKey]*scoped{},
		written:    map[types.NamespacedName]*writtenInstance{},
		lastSeen:   map[types.NamespacedName]seenInstance{},
		states:     map[types.NamespacedName]string{},
		resyncAt:   map[types.NamespacedName]time.Time{},
		listed:     map[types.UID]map[schema.GroupVersionKind]bool{},
	}
	m.orphans = newOrphanage(m)
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
		if err := gate(m.ctx, m.cluster, m.g); err != nil {
			return err
		}
	}
	inst := &unstructured.Unstructured{}
	inst.SetGroupVersionKind(m.g.Instance.GVK)
	if err := m.watch(inst, m.newInstanceHandler()); err != nil {
		return err
	}
	m.followCRD()
	m.startOrphanage()
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

// setState records an instance's state for the instances gauge.
// An empty state forgets the instance.
func (m *member) setState(key types.NamespacedName, state string) {
	m.mu.Lock()
	old, had := m.states[key]
	if state == "" {
		delete(m.states, key)
	} else {
		m.states[key] = state
	}
	m.countNamespaceLocked(key.Namespace, had, state != "")
	m.mu.Unlock()
	if old == state || m.ctx.Err() != nil {
		return
	}
	cluster := m.cluster.String()
	if had {
		instancesByState.WithLabelValues(m.g.Name, cluster, old).Dec()
	}
	if state != "" {
		instancesByState.WithLabelValues(m.g.Name, cluster, state).Inc()
	}
}

// countNamespaceLocked keeps perNamespace and spans when an instance of
// ns is first recorded (had false, has true) or forgotten.
func (m *member) countNamespaceLocked(ns string, had, has bool) {
	switch {
	case !had && has:
		if m.perNamespace == nil {
			m.perNamespace = map[string]int{}
		}
		m.perNamespace[ns]++
	case had && !has:
		if m.perNamespace[ns]--; m.perNamespace[ns] <= 0 {
			delete(m.perNamespace, ns)
		}
	default:
		return
	}
	m.spans.Store(len(m.perNamespace) > 1)
}

// spansNamespaces reports whether the cluster has instances of the graph
// in more than one namespace (cluster-scoped ones counting as one).
func (m *member) spansNamespaces() bool { return m.spans.Load() }
