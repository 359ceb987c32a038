package testing

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

var _ cache.Cache = &fakeCache{}

// fakeCache serves reads straight from the fake client and builds a real
// client-go informer, fed by the fake client's List and Watch, for each kind
// a controller watches.
type fakeCache struct {
	client.Reader
	client client.WithWatch
	scheme *runtime.Scheme

	mu        sync.Mutex
	ctx       context.Context // set by Start; informers created later start at once
	informers map[informerKey]*fakeInformer
}

// informerKey separates typed, unstructured and metadata-only informers of
// one kind, as controller-runtime's cache does.
type informerKey struct {
	gvk  schema.GroupVersionKind
	form string
}

type fakeInformer struct {
	toolscache.SharedIndexInformer
	cancel context.CancelFunc
}

func newFakeCache(c client.WithWatch, scheme *runtime.Scheme) *fakeCache {
	return &fakeCache{Reader: c, client: c, scheme: scheme, informers: map[informerKey]*fakeInformer{}}
}

func (c *fakeCache) GetInformer(ctx context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, err
	}
	return c.informerFor(informerKey{gvk: gvk, form: formOf(obj)})
}

func (c *fakeCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, _ ...cache.InformerGetOption) (cache.Informer, error) {
	form := "typed"
	if !c.scheme.Recognizes(gvk) {
		form = "unstructured"
	}
	return c.informerFor(informerKey{gvk: gvk, form: form})
}

func (c *fakeCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return err
	}
	key := informerKey{gvk: gvk, form: formOf(obj)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.informers[key]; ok {
		inf.cancel()
		delete(c.informers, key)
	}
	return nil
}

// Start starts every informer created so far, and each one created later,
// and blocks until ctx is done.
func (c *fakeCache) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.ctx != nil {
		c.mu.Unlock()
		return fmt.Errorf("cache already started")
	}
	c.ctx = ctx
	for _, inf := range c.informers {
		c.run(inf)
	}
	c.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (c *fakeCache) WaitForCacheSync(ctx context.Context) bool {
	for {
		if c.synced() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// IndexField records nothing: declare indexes through
// FakeClusterOptions.Build (WithIndex) instead. It returns nil so that
// providers that apply indexes to every cluster can engage fake ones.
func (c *fakeCache) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}

func (c *fakeCache) synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		return false
	}
	for _, inf := range c.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

func (c *fakeCache) informerFor(key informerKey) (*fakeInformer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.informers[key]; ok {
		return inf, nil
	}
	example, err := c.newObject(key)
	if err != nil {
		return nil, err
	}
	lw := &gaplessListWatch{newList: func() (client.ObjectList, error) { return c.newList(key) }, client: c.client,
		convert: converterFor(key)}
	inf := &fakeInformer{SharedIndexInformer: toolscache.NewSharedIndexInformer(lw.listWatch(), example, 0, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
	})}
	c.informers[key] = inf
	if c.ctx != nil {
		c.run(inf)
	}
	return inf, nil
}

// run starts inf under the cache's context; c.mu must be held.
func (c *fakeCache) run(inf *fakeInformer) {
	ctx, cancel := context.WithCancel(c.ctx)
	inf.cancel = cancel
	go inf.RunWithContext(ctx)
}

func (c *fakeCache) newObject(key informerKey) (runtime.Object, error) {
	switch key.form {
	case "unstructured":
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(key.gvk)
		return u, nil
	case "metadata":
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(key.gvk)
		return m, nil
	}
	return c.scheme.New(key.gvk)
}

func (c *fakeCache) newList(key informerKey) (client.ObjectList, error) {
	listGVK := key.gvk.GroupVersion().WithKind(key.gvk.Kind + "List")
	switch key.form {
	case "unstructured":
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(listGVK)
		return l, nil
	case "metadata":
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(listGVK)
		return l, nil
	}
	obj, err := c.scheme.New(listGVK)
	if err != nil {
		return nil, err
	}
	list, ok := obj.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", strings.TrimSuffix(listGVK.Kind, "List"))
	}
	return list, nil
}

// converterFor returns how a watched object becomes one of key's form:
// metadata only, unstructured, or as stored (typed).
func converterFor(key informerKey) func(runtime.Object) (runtime.Object, error) {
	var newObj func() runtime.Object
	switch key.form {
	case "metadata":
		newObj = func() runtime.Object { return &metav1.PartialObjectMetadata{} }
	case "unstructured":
		newObj = func() runtime.Object { return &unstructured.Unstructured{} }
	default:
		return func(obj runtime.Object) (runtime.Object, error) { return obj, nil }
	}
	return func(obj runtime.Object) (runtime.Object, error) {
		data, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("fake cache: encoding %s: %w", key.gvk, err)
		}
		out := newObj()
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("fake cache: decoding %s: %w", key.gvk, err)
		}
		out.GetObjectKind().SetGroupVersionKind(key.gvk)
		return out, nil
	}
}

func formOf(obj client.Object) string {
	switch obj.(type) {
	case runtime.Unstructured:
		return "unstructured"
	case *metav1.PartialObjectMetadata:
		return "metadata"
	}
	return "typed"
}

// gaplessListWatch lists and watches one kind through the fake client
// without losing a write made between the list and the watch: the fake
// client's watches cannot resume from a resourceVersion, so each list first
// opens the watch that the reflector's next Watch call returns. An object
// both listed and then reported by that watch arrives as an update.
type gaplessListWatch struct {
	newList func() (client.ObjectList, error)
	client  client.WithWatch
	// convert puts a watched object in the informer's form: the fake
	// client's watches send objects as stored, whatever the list asked for.
	// Nil passes them on as they are.
	convert func(runtime.Object) (runtime.Object, error)

	mu      sync.Mutex
	pending watch.Interface // opened by the last list, not yet handed out
}

func (lw *gaplessListWatch) listWatch() noWatchList {
	return noWatchList{&toolscache.ListWatch{ListWithContextFunc: lw.list, WatchFuncWithContext: lw.watch}}
}

func (lw *gaplessListWatch) list(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	list, err := lw.newList()
	if err != nil {
		return nil, err
	}
	w, err := lw.client.Watch(ctx, list)
	if err != nil {
		return nil, err
	}
	if err := lw.client.List(ctx, list); err != nil {
		w.Stop()
		return nil, err
	}
	lw.mu.Lock()
	if lw.pending != nil {
		lw.pending.Stop()
	}
	lw.pending = lw.converted(w)
	lw.mu.Unlock()
	return list, nil
}

// converted passes w's events on in the informer's form.
func (lw *gaplessListWatch) converted(w watch.Interface) watch.Interface {
	if lw.convert == nil {
		return w
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type == watch.Error || e.Object == nil {
			return e, true
		}
		obj, err := lw.convert(e.Object)
		if err != nil {
			return watch.Event{Type: watch.Error, Object: &metav1.Status{
				Status: metav1.StatusFailure, Message: err.Error(), Reason: metav1.StatusReasonInternalError,
			}}, true
		}
		e.Object = obj
		return e, true
	})
}

func (lw *gaplessListWatch) watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	lw.mu.Lock()
	w := lw.pending
	lw.pending = nil
	lw.mu.Unlock()
	if w != nil {
		return w, nil
	}
	list, err := lw.newList()
	if err != nil {
		return nil, err
	}
	w, err = lw.client.Watch(ctx, list)
	if err != nil {
		return nil, err
	}
	return lw.converted(w), nil
}

// noWatchList tells client-go's reflector to list and then watch: the fake
// client's watches cannot stream an initial list (WatchListClient).
type noWatchList struct{ *toolscache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }
