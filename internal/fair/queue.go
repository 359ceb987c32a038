package fair

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

// A graph's queue hands requests out in turns rather than in the order they
// came: clusters take turns, and within a cluster its namespaces do, each
// namespace's requests in the order they came. A tenant that floods the
// queue (a thousand instances, each requeued) so only puts its own requests
// behind one another; another namespace's request is next but one. Workers
// still decide what runs (Slots): the order only says who is looked at
// first.

// flow is whose work a request is: one namespace of one cluster. The
// cluster-scoped instances of a cluster form a flow of their own, under the
// empty namespace.
type flow struct {
	cluster   multicluster.ClusterName
	namespace string
}

func flowOf(req mcreconcile.Request) flow {
	return flow{cluster: req.ClusterName, namespace: req.Namespace}
}

// NewQueue is a rate-limited work queue named name (the "name" label of
// its workqueue_* metrics) whose order is fairQueue's and whose retries
// are limited per flow by the Retries it returns too.
func NewQueue(name string) (workqueue.TypedRateLimitingInterface[mcreconcile.Request], *Retries) {
	inner := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[mcreconcile.Request]{
		Name:  name,
		Queue: newFairQueue(),
	})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[mcreconcile.Request]{
		Name:  name,
		Queue: inner,
	})
	retries := newRetries()
	return workqueue.NewTypedRateLimitingQueueWithConfig[mcreconcile.Request](retries,
		workqueue.TypedRateLimitingQueueConfig[mcreconcile.Request]{Name: name, DelayingQueue: delaying}), retries
}

var _ workqueue.Queue[mcreconcile.Request] = &fairQueue{}

// fairQueue is the storage of a work queue: a round of clusters, each with
// a round of its namespaces, each with its requests first in, first out.
// Its methods are called under the work queue's lock, never concurrently.
type fairQueue struct {
	clusters  fifo[multicluster.ClusterName] // clusters with requests, whose turn comes in this order
	byCluster map[multicluster.ClusterName]*clusterRound
	n         int
}

// clusterRound is one cluster's namespaces with requests, in turn order.
type clusterRound struct {
	namespaces fifo[string]
	byNS       map[string]*fifo[mcreconcile.Request]
}

func newFairQueue() *fairQueue {
	return &fairQueue{byCluster: map[multicluster.ClusterName]*clusterRound{}}
}

// Touch keeps a request where it is: a request added again keeps its place.
func (q *fairQueue) Touch(mcreconcile.Request) {}

// Len is the number of requests held.
func (q *fairQueue) Len() int { return q.n }

// Push adds req at the end of its namespace's line; a namespace or cluster
// that had nothing waiting joins the end of its round.
func (q *fairQueue) Push(req mcreconcile.Request) {
	cr := q.byCluster[req.ClusterName]
	if cr == nil {
		cr = &clusterRound{byNS: map[string]*fifo[mcreconcile.Request]{}}
		q.byCluster[req.ClusterName] = cr
		q.clusters.push(req.ClusterName)
	}
	line := cr.byNS[req.Namespace]
	if line == nil {
		line = &fifo[mcreconcile.Request]{}
		cr.byNS[req.Namespace] = line
		cr.namespaces.push(req.Namespace)
	}
	line.push(req)
	q.n++
}

// Pop takes the first request of the next namespace of the next cluster,
// and sends both to the end of their rounds if they hold more. The work
// queue calls it only when Len is positive.
func (q *fairQueue) Pop() mcreconcile.Request {
	cluster := q.clusters.pop()
	cr := q.byCluster[cluster]
	ns := cr.namespaces.pop()
	line := cr.byNS[ns]
	req := line.pop()
	q.n--
	if line.len() > 0 {
		cr.namespaces.push(ns)
	} else {
		delete(cr.byNS, ns)
	}
	if cr.namespaces.len() > 0 {
		q.clusters.push(cluster)
	} else {
		delete(q.byCluster, cluster)
	}
	return req
}

// fifo is a first-in, first-out line on a slice that gives its room back
// as it drains.
type fifo[T any] struct {
	items []T
	head  int
}

func (f *fifo[T]) len() int { return len(f.items) - f.head }

func (f *fifo[T]) push(v T) { f.items = append(f.items, v) }

func (f *fifo[T]) pop() T {
	var zero T
	v := f.items[f.head]
	f.items[f.head] = zero
	f.head++
	switch {
	case f.head == len(f.items):
		f.items, f.head = f.items[:0], 0
	case f.head > 32 && f.head*2 >= len(f.items):
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	return v
}
