package spoke

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/crdschema"
	"github.com/fleetgraph/fleetgraph/internal/fair"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// controller serves one graph on every cluster it is attached to: one work
// queue of mcreconcile.Requests, Options.Workers workers, and one member per
// cluster holding that cluster's watches and memory.
type controller struct {
	name string
	// v is the version served; g is its graph.
	v     Version
	g     *graph.Graph
	opts  Config
	log   logr.Logger
	queue workqueue.TypedRateLimitingInterface[mcreconcile.Request]
	// retries is queue's rate limiter: its After adds a floor to a retry
	// after a reconcile stopped by a limit.
	retries *fair.Retries

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// detaching counts members whose clean-up has not finished; stop waits
	// for it so that no series of a stopped controller outlives it.
	detaching sync.WaitGroup

	mu      sync.Mutex
	idle    *sync.Cond // on mu: a member's busy count dropped
	members map[multicluster.ClusterName]*member
	// slots holds, per member, the reconciles in flight and the requests
	// parked, by namespace (package fair).
	slots map[*member]*fair.Slots
	// onEmpty, if set, is called (in a goroutine) whenever the last member
	// detaches; the Runtime uses it to stop versions nobody serves anymore.
	onEmpty func()
	// defaults is the instance schema whose defaults every instance read
	// gets (defaults.go), built once for every cluster: it is only read.
	// Nil when the graph has no structural schema.
	defaults *structuralschema.Structural
	// reads holds the ids of the nodes whose observed value something in
	// the graph reads (graph.Graph.Reads): only their children's answers
	// are kept.
	reads map[string]bool
}

// QueueName is the name of a graph's work queue, the "name" label of its
// workqueue_* metrics. It stays the same across updates of the graph.
func QueueName(graphName string) string { return "fleetgraph-" + graphName }

func newController(parent context.Context, name string, v Version, opts Config) *controller {
	g := v.Graph
	ctx, cancel := context.WithCancel(parent)
	c := &controller{
		name: name,
		v:    v,
		g:    g,
		opts: opts,
		log:  opts.Logger.WithValues("controller", name, "graph", g.Name),
		// The queue is named after the graph, not this version of it, so
		// its metrics keep one name across graph updates.
		ctx:     ctx,
		cancel:  cancel,
		members: map[multicluster.ClusterName]*member{},
		slots:   map[*member]*fair.Slots{},
		// Per member, this was 12 KiB each on a hub with 5 graphs on
		// 1,000 clusters.
		defaults: crdschema.StorageSchema(g.CRD),
		reads:    instance.ReadNodes(g),
	}
	c.queue, c.retries = fair.NewQueue(QueueName(g.Name))
	c.idle = sync.NewCond(&c.mu)
	for range opts.Workers {
		c.wg.Go(c.work)
	}
	return c
}

// stop ends every member, shuts the queue down and waits for the workers.
func (c *controller) stop() {
	c.cancel()
	// attach counts a member only under mu and while ctx is live, so after
	// this barrier no member is added to detaching any more.
	c.mu.Lock()
	c.mu.Unlock() //nolint:staticcheck // an empty critical section is the barrier
	c.queue.ShutDown()
	c.wg.Wait()
	c.detaching.Wait()
}

// attachAll attaches every cluster of the list.
func (c *controller) attachAll(clusters []*engagement) {
	for _, e := range clusters {
		c.attach(e)
	}
}

// attach starts serving the graph on e's cluster, unless it is served there
// already with the same cluster and a live engagement. It never blocks.
func (c *controller) attach(e *engagement) {
	if c.ctx.Err() != nil || e.ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	if old, ok := c.members[e.name]; ok {
		if old.cl == e.cl && old.ctx.Err() == nil {
			c.mu.Unlock()
			return
		}
		old.cancel()
	}
	m := newMember(c, e)
	c.members[e.name] = m
	c.detaching.Add(1)
	c.mu.Unlock()

	context.AfterFunc(m.ctx, func() { c.detach(m) })
	go m.start()
}

// detach forgets an ended member once no reconcile of it is in flight, so
// that a reconcile finishing late cannot record metrics for a cluster that
// is no longer served.
func (c *controller) detach(m *member) {
	defer c.detaching.Done()
	c.mu.Lock()
	if c.members[m.cluster] == m {
		delete(c.members, m.cluster)
	}
	empty := len(c.members) == 0
	for c.busyLocked(m) > 0 {
		c.idle.Wait()
	}
	delete(c.slots, m)
	c.mu.Unlock()
	m.cleanup()
	if empty && c.onEmpty != nil {
		go c.onEmpty()
	}
}

func (c *controller) member(name multicluster.ClusterName) *member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.liveLocked(name)
}

func (c *controller) liveLocked(name multicluster.ClusterName) *member {
	m := c.members[name]
	if m == nil || m.ctx.Err() != nil {
		return nil
	}
	return m
}

// acquire returns the live member for req's cluster and counts a reconcile
// in flight on it until release; nil if there is none. If req does not fit
// in its cluster's or its namespace's share (fair.Slots), it is parked
// until a reconcile of its cluster is released.
func (c *controller) acquire(req mcreconcile.Request) (m *member, parked bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m = c.liveLocked(req.ClusterName)
	if m == nil {
		return nil, false
	}
	l := c.slots[m]
	if l == nil {
		l = fair.NewSlots()
		c.slots[m] = l
	}
	if !l.Admit(req, c.shareLocked(), m.states.spansNamespaces()) {
		return nil, true
	}
	return m, false
}

// release ends a reconcile of m in namespace ns, and puts back in the
// queue the parked requests of m that fit now.
func (c *controller) release(m *member, ns string) {
	c.mu.Lock()
	var next []types.NamespacedName
	if l := c.slots[m]; l != nil {
		l.Done(ns)
		if l.Busy() <= 0 {
			c.idle.Broadcast()
		}
		next = l.Unpark(c.shareLocked(), m.states.spansNamespaces())
		if l.Idle() {
			delete(c.slots, m)
		}
	}
	c.mu.Unlock()
	for _, name := range next {
		c.queue.Add(mcreconcile.Request{ClusterName: m.cluster, Request: reconcileRequest(name)})
	}
}

// busyLocked is the number of m's reconciles in flight.
func (c *controller) busyLocked(m *member) int {
	if l := c.slots[m]; l != nil {
		return l.Busy()
	}
	return 0
}

// retire ends the member serving the named cluster, if any, and waits until
// no reconcile of it is in flight, so that a newer version taking the
// cluster over never writes next to this one.
func (c *controller) retire(name multicluster.ClusterName) {
	c.mu.Lock()
	m := c.members[name]
	c.mu.Unlock()
	if m == nil {
		return
	}
	m.cancel() // acquire hands it out no more
	c.mu.Lock()
	for c.busyLocked(m) > 0 {
		c.idle.Wait()
	}
	c.mu.Unlock()
}

// retireExcept ends every member whose cluster keep does not name, without
// waiting: none of them has passed the gate, so none reconciles.
func (c *controller) retireExcept(keep func(multicluster.ClusterName) bool) (left int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, m := range c.members {
		if keep(name) {
			left++
			continue
		}
		m.cancel()
	}
	return left
}

func (c *controller) counts() map[multicluster.ClusterName]Count {
	c.mu.Lock()
	members := make([]*member, 0, len(c.members))
	for _, m := range c.members {
		if m.ctx.Err() == nil { // a member that ended is no longer counted
			members = append(members, m)
		}
	}
	c.mu.Unlock()
	out := make(map[multicluster.ClusterName]Count, len(members))
	for _, m := range members {
		out[m.cluster] = m.count()
	}
	return out
}

func (c *controller) work() {
	for {
		req, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		c.process(req)
	}
}

// process runs one reconcile and requeues as its outcome asks: with backoff
// on error, after a delay when asked, else forgets the request's failures.
func (c *controller) process(req mcreconcile.Request) {
	defer c.queue.Done(req)
	m, parked := c.acquire(req)
	if parked {
		return
	}
	if m == nil {
		c.queue.Forget(req)
		return
	}
	defer c.release(m, req.Namespace)
	start := time.Now()
	after, err := m.reconciler.reconcileSafely(req.NamespacedName)
	cluster := req.ClusterName.String()
	reconcileDuration.WithLabelValues(c.g.Name, cluster).Observe(time.Since(start).Seconds())
	switch {
	case err != nil && m.ctx.Err() == nil:
		reconcileTotal.WithLabelValues(c.g.Name, cluster, "error").Inc()
		reconcileErrors.WithLabelValues(c.g.Name, cluster).Inc()
		if !errors.Is(err, instance.ErrConflict) {
			logFailure(c.log, c.queue, c.g.Name, req, err) // failure_log.go
		}
		c.queue.AddAfter(req, c.retries.After(req, err, time.Since(start)))
	case after > 0:
		reconcileTotal.WithLabelValues(c.g.Name, cluster, "requeue").Inc()
		c.queue.Forget(req)
		c.queue.AddAfter(req, after)
	default:
		reconcileTotal.WithLabelValues(c.g.Name, cluster, "success").Inc()
		c.queue.Forget(req)
	}
}
