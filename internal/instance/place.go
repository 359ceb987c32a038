package instance

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// place is what an engine holds for one cluster it writes in: the memory
// of its applies there, the index of the children it owns there, and its
// watches of their kinds. It lives as long as its Cluster handle is the
// one the driver gives for that name; a new handle (the cluster was
// engaged anew) or ForgetCluster replaces it with an empty one, and the
// old one's handlers and informers stop with its context.
type place struct {
	e       *Engine
	c       *Cluster
	ctx     context.Context
	cancel  context.CancelFunc
	memory  *applyMemory
	owned   *ownedIndex
	watches *watches

	mu       sync.Mutex
	cleanups []func()
}

func newPlace(e *Engine, c *Cluster) *place {
	ctx, cancel := context.WithCancel(e.ctx)
	p := &place{e: e, c: c, ctx: ctx, cancel: cancel, memory: newApplyMemory(), owned: newOwnedIndex()}
	p.watches = newWatches(p)
	return p
}

// placeSet is an engine's places, by cluster name. It calls nothing while
// it holds its lock.
type placeSet struct {
	mu sync.Mutex
	m  map[string]*place
}

// of returns e's place for c, made on first use; a place kept for another
// handle under c's name is stopped and forgotten, with the watches of the
// external references read there.
func (ps *placeSet) of(e *Engine, c *Cluster) *place {
	ps.mu.Lock()
	p := ps.m[c.name]
	if p != nil && p.c == c {
		ps.mu.Unlock()
		return p
	}
	old := p
	p = newPlace(e, c)
	ps.m[c.name] = p
	ps.mu.Unlock()
	if old != nil {
		old.stop()
		e.refs.dropCluster(c.name)
	}
	return p
}

// named returns the place of the cluster called name, nil if none.
func (ps *placeSet) named(name string) *place {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.m[name]
}

// all returns every place, in no order.
func (ps *placeSet) all() []*place {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]*place, 0, len(ps.m))
	for _, p := range ps.m {
		out = append(out, p)
	}
	return out
}

// take forgets the place of the cluster called name and returns it.
func (ps *placeSet) take(name string) *place {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.m[name]
	delete(ps.m, name)
	return p
}

// takeAll forgets every place and returns them.
func (ps *placeSet) takeAll() []*place {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]*place, 0, len(ps.m))
	for name, p := range ps.m {
		out = append(out, p)
		delete(ps.m, name)
	}
	return out
}

// ForgetCluster forgets everything the engine remembers of the cluster
// called name: what it applied there (so every child there is applied
// again, whatever the memory said), the children it owns there (its
// watches find them again), its watches and the watches of external
// references read there. It returns the instances that had children or
// references there, for the driver to reconcile again: a driver calls it
// when the cluster may have lost what was written to it.
func (e *Engine) ForgetCluster(name string) []types.NamespacedName {
	p := e.places.take(name)
	seen := map[types.NamespacedName]bool{}
	var out []types.NamespacedName
	add := func(key types.NamespacedName) {
		if !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	if p != nil {
		for _, uid := range p.owned.owners() {
			if key, ok := e.instances.instanceOf(uid); ok {
				add(key)
			}
		}
		for _, key := range p.memory.owners() {
			add(key)
		}
		p.stop()
	}
	for _, key := range e.refs.dropCluster(name) {
		add(key)
	}
	return out
}

// addCleanup registers f to run when the place stops; if it has stopped
// already f runs at once.
func (p *place) addCleanup(f func()) {
	p.mu.Lock()
	if p.ctx.Err() == nil {
		p.cleanups = append(p.cleanups, f)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	f()
}

// stop ends the place's watches and runs its clean-ups.
func (p *place) stop() {
	p.mu.Lock()
	p.cancel()
	fs := p.cleanups
	p.cleanups = nil
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// home reports whether the place is the cluster the instances live in.
func (p *place) home() bool { return p.c == p.e.home }

// where is how messages name the place's cluster: nothing for the
// instance's own, " in <name>" for another.
func (p *place) where() string {
	if p.home() {
		return ""
	}
	return " in " + displayName(p.c.name)
}

// callCtx bounds one call to the place's cluster.
func (p *place) callCtx() (context.Context, context.CancelFunc) {
	return CallContext(p.ctx, p.e.opts.CallTimeout)
}

// namespaced reports whether the cluster serves gvk namespaced.
func (p *place) namespaced(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := p.c.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("kind %s is not served%s: %w", gvk, p.where(), err)
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// childMeta reads a child's metadata: from the cache for the graph's kinds
// (watched), live for a kind the instance listed besides. Nil if the
// object does not exist.
func (p *place) childMeta(e Entry) (*metav1.PartialObjectMetadata, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(e.gvk())
	ctx, cancel := p.callCtx()
	defer cancel()
	key := types.NamespacedName{Namespace: e.Namespace, Name: e.Name}
	var err error
	if p.e.kinds.has(e.gvk()) {
		err = p.c.GetCache().Get(ctx, key, obj)
	} else {
		err = p.c.GetAPIReader().Get(ctx, key, obj)
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

func isNoMatch(err error) bool { return err != nil && meta.IsNoMatchError(err) }
