package hubgraph

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// This file watches what external references read: one handler per
// (cluster, kind) on that cluster's own metadata-only informer (the one
// the children's watches and the spoke runtime use), so a reference costs
// no informer of its own. The values are read live at each evaluation;
// the watch only says when to read again. Metadata is enough for both
// kinds of reference: a by-name reference matches the name, a by-selector
// one the labels, and any change to an object moves its resourceVersion.
//
// A handler is removed when no instance's last evaluation reads that kind
// in that cluster (externals.unindexLocked), and when the cluster leaves
// the fleet or is engaged anew (sweep). Nothing here waits on a cluster
// while holding the lock: a cluster that hangs delays only the
// evaluations that read it, never another cluster's watches.

// extWatch is one (cluster, kind) watched for external references.
type extWatch struct {
	// cl is the engagement the handler is on: a cluster engaged anew has
	// a new cache, watched anew.
	cl       cluster.Cluster
	informer cache.Informer
	reg      toolscache.ResourceEventHandlerRegistration
}

func (w *extWatch) remove() { _ = w.informer.RemoveEventHandler(w.reg) }

// ensure watches gvk in the named cluster (cl) for external references,
// once per engagement; it returns when the informer has synced (bounded
// by ctx). The caller has noted a reference of that (cluster, kind).
func (x *externals) ensure(ctx context.Context, name string, cl cluster.Cluster, gvk schema.GroupVersionKind) error {
	key := watchKey{cluster: name, gvk: gvk}
	x.mu.Lock()
	old := x.watches[key]
	x.mu.Unlock()
	if old != nil && old.cl == cl {
		return nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	inf, err := cl.GetCache().GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("watching %s in %s: %w", gvk.Kind, displayName(name), err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	cur := x.watches[key]
	if (cur != nil && cur.cl == cl) || x.uses[key] == 0 || x.ctx.Err() != nil {
		return nil
	}
	reg, err := inf.AddEventHandler(extHandler{x: x, cluster: name, gvk: gvk})
	if err != nil {
		return fmt.Errorf("watching %s in %s: %w", gvk.Kind, displayName(name), err)
	}
	if cur != nil {
		cur.remove() // the old engagement's
	}
	x.watches[key] = &extWatch{cl: cl, informer: inf, reg: reg}
	return nil
}

// sweepEvery is how often the watches of clusters that left are removed.
const sweepEvery = DefaultFleetPoll

// sweep removes, until ctx ends, the handlers on clusters that left the
// fleet or were engaged anew, and requeues the instances that read there:
// their next evaluation finds the cluster gone, or watches its new
// engagement.
func (x *externals) sweep(ctx context.Context) {
	every(ctx, sweepEvery, nil, func() { // fleet.go
		for _, key := range x.departed(ctx) {
			x.enqueue(key)
		}
	})
}

// departed removes the watches of clusters no longer engaged as they
// were, and returns the instances that read there.
func (x *externals) departed(ctx context.Context) []types.NamespacedName {
	x.mu.Lock()
	watched := make(map[watchKey]cluster.Cluster, len(x.watches))
	for k, w := range x.watches {
		if k.cluster != "" { // the hub's own never leaves
			watched[k] = w.cl
		}
	}
	x.mu.Unlock()
	var gone []watchKey
	for k, was := range watched {
		if cl, err := x.clusters.Cluster(ctx, k.cluster); err != nil || cl != was {
			gone = append(gone, k)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, k := range gone {
		if w := x.watches[k]; w != nil && w.cl == watched[k] {
			w.remove()
			delete(x.watches, k)
		}
	}
	var out []types.NamespacedName
	for key, refs := range x.refs {
		for i := range refs {
			if slices.Contains(gone, refs[i].watch()) {
				out = append(out, key)
				break
			}
		}
	}
	return out
}

// removeAll removes every handler.
func (x *externals) removeAll() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k, w := range x.watches {
		w.remove()
		delete(x.watches, k)
	}
}

// watching reports whether gvk is watched in the named cluster through cl
// (tests).
func (x *externals) watching(name string, cl cluster.Cluster, gvk schema.GroupVersionKind) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	w := x.watches[watchKey{cluster: name, gvk: gvk}]
	return w != nil && w.cl == cl
}

// extHandler requeues the instances whose external references read the
// object an event is about, unless the event shows it as they read it.
type extHandler struct {
	x       *externals
	cluster string
	gvk     schema.GroupVersionKind
}

var _ toolscache.ResourceEventHandler = extHandler{}

func (h extHandler) OnAdd(obj any, _ bool)       { h.changed(nil, viewOf(obj)) }
func (h extHandler) OnUpdate(oldObj, newObj any) { h.changed(viewOf(oldObj), viewOf(newObj)) }
func (h extHandler) OnDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	h.changed(viewOf(obj), nil)
}

func (h extHandler) changed(before, after *objectView) {
	if before == nil && after == nil {
		return
	}
	for _, key := range h.x.readers(h.cluster, h.gvk, before, after) {
		h.x.enqueue(key)
	}
}

// viewOf is an informer's object as an event shows it, nil when it is not
// an object.
func viewOf(obj any) *objectView {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	return &objectView{namespace: m.GetNamespace(), name: m.GetName(), rv: m.GetResourceVersion(), labels: m.GetLabels()}
}
