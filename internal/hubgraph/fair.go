package hubgraph

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/fair"
)

// Tenants share a hub graph's workers as they share a spoke graph's: the
// controller's queue is the spoke runtime's fair queue (package fair),
// whose namespaces take turns and whose retries are limited per namespace,
// and a reconcile stopped by one of the graph's Limits is retried at the
// namespace's pace (fair.Retries.After), so that one tenant's flood or
// hostile instances delay only that tenant. Every hub instance is on the
// hub cluster: the queue's flows are its namespaces.

// fairQueue adapts the fair queue, whose requests name a cluster, to the
// controller's requests, which do not: every request is the hub's.
type fairQueue struct {
	q workqueue.TypedRateLimitingInterface[mcreconcile.Request]
}

var _ workqueue.TypedRateLimitingInterface[reconcile.Request] = fairQueue{}

// newQueue is the controller's queue (controller.Options.NewQueue); it
// keeps the queue's Retries for pace.
func (s *server) newQueue(name string, _ workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	q, retries := fair.NewQueue(name)
	s.retries.Store(retries)
	return fairQueue{q: q}
}

func hubRequest(req reconcile.Request) mcreconcile.Request { return mcreconcile.Request{Request: req} }

func (f fairQueue) Add(req reconcile.Request) { f.q.Add(hubRequest(req)) }
func (f fairQueue) Len() int                  { return f.q.Len() }
func (f fairQueue) Get() (reconcile.Request, bool) {
	req, shutdown := f.q.Get()
	return req.Request, shutdown
}
func (f fairQueue) Done(req reconcile.Request) { f.q.Done(hubRequest(req)) }
func (f fairQueue) ShutDown()                  { f.q.ShutDown() }
func (f fairQueue) ShutDownWithDrain()         { f.q.ShutDownWithDrain() }
func (f fairQueue) ShuttingDown() bool         { return f.q.ShuttingDown() }
func (f fairQueue) AddAfter(req reconcile.Request, d time.Duration) {
	f.q.AddAfter(hubRequest(req), d)
}
func (f fairQueue) AddRateLimited(req reconcile.Request) { f.q.AddRateLimited(hubRequest(req)) }
func (f fairQueue) Forget(req reconcile.Request)         { f.q.Forget(hubRequest(req)) }
func (f fairQueue) NumRequeues(req reconcile.Request) int {
	return f.q.NumRequeues(hubRequest(req))
}

// limitedRequeue is when to look again at an instance whose reconcile,
// which took took, was stopped by one of the graph's Limits: at its
// namespace's pace, and no sooner than waitingRequeue.
func (s *server) limitedRequeue(req reconcile.Request, took time.Duration) time.Duration {
	retries := s.retries.Load()
	if retries == nil {
		return waitingRequeue
	}
	return max(waitingRequeue, retries.After(hubRequest(req), fair.ErrStoppedByLimit, took))
}
