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
	// memory tells the echo of our own applies from other changes
	// (apply_memory.go).
	memory *applyMemory
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

func newWatchSet(o *owner, memory *applyMemory, instances *sync.Map, enqueue func(types.NamespacedName)) *watchSet {
	return &watchSet{owner: o, memory: memory, instances: instances, enqueue: enqueue, m: map[watchKey]*watch{}}
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
		AddFunc:    func(obj any) { w.changed(name, gvk, obj, false) },
		UpdateFunc: func(_, obj any) { w.changed(name, gvk, obj, false) },
		DeleteFunc: func(obj any) { w.changed(name, gvk, obj, true) },
	})
	if err != nil {
		return err
	}
	w.m[key] = &watch{cl: cl, informer: inf, reg: reg}
	return nil
}

// changed requeues the hub instance owning obj, a child of kind gvk in the
// named cluster that changed (or went), unless the change is the echo of
// our own apply. An object is ours by its labels, or by our memory of
// applying it (its labels may have been taken off since).
func (w *watchSet) changed(cluster string, gvk schema.GroupVersionKind, obj any, gone bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, gone = d.Obj, true
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	id := childID{cluster: cluster, gvk: gvk, namespace: m.GetNamespace(), name: m.GetName()}
	requeue, applier, known := true, types.NamespacedName{}, false
	if gone {
		applier, known = w.memory.deleted(id)
	} else {
		requeue, applier, known = w.memory.observed(id, m.GetResourceVersion())
	}
	if !requeue {
		return
	}
	l := m.GetLabels()
	if !w.owner.graphs(l) {
		if known {
			w.enqueue(applier)
		}
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
