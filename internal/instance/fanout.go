package instance

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Every graph served on a cluster listens to the cluster's CRDs, and most
// listen to the same child kinds (ConfigMaps, Deployments). client-go gives
// each handler added to an informer a listener of its own: two goroutines
// and a buffer of 1,024 slots (16 KiB) allocated up front. With five graphs
// on a thousand clusters that was 15,000 listeners, 270 MiB of buffers and
// 30 goroutines per cluster. So the engines (and the drivers) of one
// cluster share one handler per metadata informer, which passes each event
// on to them: a Cluster holds its shared handlers (cluster.go).
//
// A listener that joins once the shared handler has seen the informer's
// initial objects is given them from the cache, under the lock that also
// holds back events, as client-go does for a handler added late. Events
// still queued for the shared handler may then be older than what the
// joiner was given; they arrive in order, and end at the current state.

var _ toolscache.ResourceEventHandler = &fanout{}

// fanouts holds a cluster's shared handlers, one per metadata kind.
type fanouts struct {
	mu     sync.Mutex
	byKind map[schema.GroupVersionKind]*fanout
}

func newFanouts() *fanouts {
	return &fanouts{byKind: map[schema.GroupVersionKind]*fanout{}}
}

// fanout is the one handler on a metadata informer of a cluster's cache.
type fanout struct {
	// join serialises joins and leaves, which may wait for the informer.
	join sync.Mutex
	// mu is held to pass an event on (read) and to change who gets it.
	mu       sync.RWMutex
	inf      cache.Informer
	reg      toolscache.ResourceEventHandlerRegistration
	handlers map[*fanoutHandle]toolscache.ResourceEventHandler
}

// fanoutHandle is one listener's place in a fanout. It is not empty: every
// pointer to a zero-size value may be the same, and handles must differ.
type fanoutHandle struct{ _ byte }

func (f *fanout) OnAdd(obj any, initial bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, h := range f.handlers {
		h.OnAdd(obj, initial)
	}
}

func (f *fanout) OnUpdate(oldObj, newObj any) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, h := range f.handlers {
		h.OnUpdate(oldObj, newObj)
	}
}

func (f *fanout) OnDelete(obj any) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, h := range f.handlers {
		h.OnDelete(obj)
	}
}

// listen adds h to the cluster's shared handler for the metadata kind of
// meta and returns once h has seen every object the informer holds; leave
// takes h off again. The informer is started in cl's cache if needed.
func (fs *fanouts) listen(ctx context.Context, cl cluster.Cluster, meta *metav1.PartialObjectMetadata, h toolscache.ResourceEventHandler) (leave func(), err error) {
	gvk := meta.GroupVersionKind()
	fs.mu.Lock()
	f := fs.byKind[gvk]
	if f == nil {
		f = &fanout{handlers: map[*fanoutHandle]toolscache.ResourceEventHandler{}}
		fs.byKind[gvk] = f
	}
	fs.mu.Unlock()

	f.join.Lock()
	defer f.join.Unlock()
	handle := &fanoutHandle{}
	if f.reg == nil {
		err = f.start(ctx, cl, meta, handle, h)
	} else {
		err = f.add(ctx, cl, gvk, handle, h)
	}
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", gvk, err)
	}
	return func() { f.leave(handle) }, nil
}

// start registers the shared handler with h as its first listener, which
// gets the informer's initial objects from the informer itself.
func (f *fanout) start(ctx context.Context, cl cluster.Cluster, meta *metav1.PartialObjectMetadata, handle *fanoutHandle, h toolscache.ResourceEventHandler) error {
	inf, err := cl.GetCache().GetInformer(ctx, meta)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.handlers[handle] = h
	f.mu.Unlock()
	reg, err := inf.AddEventHandler(f)
	if err != nil {
		f.mu.Lock()
		delete(f.handlers, handle)
		f.mu.Unlock()
		return err
	}
	f.inf, f.reg = inf, reg
	if err := WaitSynced(ctx, reg); err != nil {
		f.leaveLocked(handle)
		return err
	}
	return nil
}

// add lets h join once the shared handler has synced, giving it what the
// cache holds first.
func (f *fanout) add(ctx context.Context, cl cluster.Cluster, gvk schema.GroupVersionKind, handle *fanoutHandle, h toolscache.ResourceEventHandler) error {
	if err := WaitSynced(ctx, f.reg); err != nil {
		return err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := cl.GetCache().List(ctx, list); err != nil {
		return err
	}
	for i := range list.Items {
		h.OnAdd(&list.Items[i], true)
	}
	f.handlers[handle] = h
	return nil
}

// leave takes a listener off; the last one takes the shared handler off
// the informer.
func (f *fanout) leave(handle *fanoutHandle) {
	f.join.Lock()
	defer f.join.Unlock()
	f.leaveLocked(handle)
}

// leaveLocked is leave for a caller that holds f.join.
func (f *fanout) leaveLocked(handle *fanoutHandle) {
	f.mu.Lock()
	delete(f.handlers, handle)
	last := len(f.handlers) == 0 && f.reg != nil
	f.mu.Unlock()
	if last {
		_ = f.inf.RemoveEventHandler(f.reg)
		f.inf, f.reg = nil, nil
	}
}

// WaitSynced waits until reg has seen the informer's initial objects, on
// the registration's own signal: a hub engaging a thousand clusters starts
// thousands of these at once, and polling each would keep the CPU busy
// with timers while lists are slow.
func WaitSynced(ctx context.Context, reg toolscache.ResourceEventHandlerRegistration) error {
	select {
	case <-reg.HasSyncedChecker().Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
