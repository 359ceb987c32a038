package hubgraph

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// instanceHandler enqueues an instance on every event of the instance
// watch except the echo of our own writes (instance.Writes): the
// reconcile that wrote already acted on everything those writes hold,
// and a path that must come back asks for it (RequeueAfter). Any other
// event drops our copy: the cache may have skipped our version (a relist)
// and hold a newer one, which must not wait for the copy to expire to be
// seen; if the event's is older than ours instead, the worst is a write
// made again or a conflict, which requeues. Every event also tells the
// engine which instances exist (its orphanage's suspects), and changed
// (view.go) that the counts may have moved.
type instanceHandler struct {
	e       *instance.Engine
	changed func()
}

var _ handler.EventHandler = instanceHandler{}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func request(o client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: keyOf(o.GetNamespace(), o.GetName())}
}

func (h instanceHandler) observe(o client.Object) {
	h.changed()
	if u, ok := o.(*unstructured.Unstructured); ok {
		h.e.Instances().Saw(u)
	}
}

func (h instanceHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	h.observe(e.Object)
	h.e.Writes().Forget(keyOf(e.Object.GetNamespace(), e.Object.GetName()))
	q.Add(request(e.Object))
}

func (h instanceHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	h.observe(e.ObjectNew)
	w := h.e.Writes()
	if w.Echo(e.ObjectNew) || w.Hold(e.ObjectNew, func() { q.Add(request(e.ObjectNew)) }) {
		return
	}
	w.Forget(keyOf(e.ObjectNew.GetNamespace(), e.ObjectNew.GetName()))
	q.Add(request(e.ObjectNew))
}

func (h instanceHandler) Delete(_ context.Context, e event.DeleteEvent, q queue) {
	h.changed()
	if u, ok := e.Object.(*unstructured.Unstructured); ok {
		h.e.Instances().Gone(u)
	}
	h.e.Writes().Forget(keyOf(e.Object.GetNamespace(), e.Object.GetName()))
	q.Add(request(e.Object))
}

func (h instanceHandler) Generic(_ context.Context, e event.GenericEvent, q queue) {
	q.Add(request(e.Object))
}

// follow waits until the hub's cache lists the graph's instances: from
// then on the engine's orphanage may condemn a child whose instance it
// does not list. It then looks for children of instances gone while
// nothing watched, in the clusters every instance writes to (the hub's
// and the literal targets'); clusters that computed targets name are
// looked at as instances are reconciled.
func (s *server) follow(ctx context.Context, inst *unstructured.Unstructured) {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		inf, err := s.rt.hub().GetCache().GetInformer(ctx, inst)
		return err == nil && inf.HasSynced(), nil
	})
	if err != nil {
		return
	}
	s.listed.Store(true)
	e := s.engine.Load()
	for _, name := range LiteralClusters(s.g) {
		if r := s.rt.reach(ctx, name); r.Err == nil {
			e.FindOrphans(r.Cluster)
		}
	}
}
