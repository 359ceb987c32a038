package hubgraph

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// watchSet holds, per target cluster and child kind, the event handler
// that requeues the hub instances whose children change there. The
// informers are the clusters' own metadata-only ones (the spoke runtime
// uses the same): only the handlers are ours.
type watchSet struct {
	owner *owner
	// instances maps an instance's UID to its key (server.instances).
	instances *sync.Map
	// enqueue requeues a hub instance (server.enqueue).
	enqueue func(types.NamespacedName)
	// ctx is the server's, set by server.start before any reconcile
	// can call ensure, and only read afterwards: once it ends, no
	// handler is added.
	ctx context.Context

	// mu guards m.
	mu sync.Mutex
	m  map[watchKey]*watch
}

type watchKey struct {
	cluster string
	gvk     schema.GroupVersionKind
}

type watch struct {
	// cl is the engagement the handler is on: a cluster that left and
	// came back under its name has a new cache, watched anew.
	cl       cluster.Cluster
	informer cache.Informer
	reg      toolscache.ResourceEventHandlerRegistration
}

func newWatchSet(o *owner, instances *sync.Map, enqueue func(types.NamespacedName)) *watchSet {
	return &watchSet{owner: o, instances: instances, enqueue: enqueue, m: map[watchKey]*watch{}}
}

// ensure watches gvk in the named cluster, once; it returns when the
// informer has synced (bounded by ctx).
func (w *watchSet) ensure(ctx context.Context, name string, cl cluster.Cluster, gvk schema.GroupVersionKind) error {
	key := watchKey{cluster: name, gvk: gvk}
	w.mu.Lock()
	old, ok := w.m[key]
	w.mu.Unlock()
	if ok && old.cl == cl {
		return nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	inf, err := cl.GetCache().GetInformer(ctx, obj)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur, ok := w.m[key]; (ok && cur.cl == cl) || w.ctx.Err() != nil {
		return nil
	}
	if cur, ok := w.m[key]; ok {
		_ = cur.informer.RemoveEventHandler(cur.reg) // the old engagement's
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.changed,
		UpdateFunc: func(_, obj any) { w.changed(obj) },
		DeleteFunc: w.changed,
	})
	if err != nil {
		return err
	}
	w.m[key] = &watch{cl: cl, informer: inf, reg: reg}
	return nil
}

// changed requeues the hub instance owning obj, if it is one of ours.
func (w *watchSet) changed(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	l := m.GetLabels()
	if !w.owner.graphs(l) {
		return
	}
	key := types.NamespacedName{Namespace: l[contract.LabelInstanceNamespace], Name: l[contract.LabelInstanceName]}
	if k, ok := w.instances.Load(types.UID(l[contract.LabelInstanceUID])); ok {
		key = k.(types.NamespacedName)
	}
	w.enqueue(key)
}

// removeAll removes every handler.
func (w *watchSet) removeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, wt := range w.m {
		_ = wt.informer.RemoveEventHandler(wt.reg)
		delete(w.m, k)
	}
}
