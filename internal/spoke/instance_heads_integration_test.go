//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// instanceLag is how late the lagging cache hands on what the instance
// informer receives: about what a tenant's stream of large instances
// cost every other instance of their kind before (issue 23: 3.2 s
// measured in the hostile corpus, at load 10).
const instanceLag = 10 * time.Second

// TestAnInstanceWatchBehindDelaysNoReconcile serves a graph on a spoke
// whose cache hands on the instance kind's events, and answers reads of
// it, instanceLag late, as when every event of the kind waits behind
// another tenant's large instances in the one watch of the kind. A new
// instance and a change to one must still be reconciled in a fraction of
// the lag: the reconciles start from the metadata-only watch of the kind,
// and read an instance the cache does not have yet from the API server.
// That watch runs from the start ("lagged"), or from the first large
// instance, here one already stored when the runtime starts
// ("lagged-large"). The same runtime without the metadata-only watch
// (InstanceCatchUp negative, as every runtime was before) is the control:
// it waits out the lag, which shows the lag is real.
func TestAnInstanceWatchBehindDelaysNoReconcile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  spoke.Config
		large bool
		fast  bool
	}{
		{name: "lagged", opts: spoke.Config{InstanceHeadsAbove: -1}, fast: true},
		{name: "lagged-large", large: true, fast: true},
		{name: "lagged-unwatched", opts: spoke.Config{InstanceCatchUp: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			took, change := lateInstanceWatch(t, tc.name, tc.opts, tc.large)
			t.Logf("3 new instances ACTIVE in %v, a change on the children in %v, behind an instance watch %v late",
				took.Round(time.Millisecond), change.Round(time.Millisecond), instanceLag)
			if tc.fast {
				assert.Less(t, took, instanceLag/2, "new instances waited for the lagging instance watch")
				assert.Less(t, change, instanceLag/2, "a change waited for the lagging instance watch")
			} else {
				assert.GreaterOrEqual(t, took, instanceLag, "the control saw instances before its cache did")
			}
		})
	}
}

// largeValue is a spec.value that makes a Pair instance larger than
// spoke.DefaultInstanceHeadsAbove.
var largeValue = strings.Repeat("x", spoke.DefaultInstanceHeadsAbove+1)

// lateInstanceWatch serves a pair graph named name, with opts, through a
// cache whose instance view is instanceLag late, and returns how long
// three new instances took to become ACTIVE and how long a change of one
// took to reach its children. With large, an instance larger than
// spoke.DefaultInstanceHeadsAbove is stored before the runtime starts.
func lateInstanceWatch(t *testing.T, name string, opts spoke.Config, large bool) (took, change time.Duration) {
	fleet := sharedFleet(t)
	g := compileAs(t, pairRGD, name)
	ns := name
	s := fleet.Spokes()[0]
	c := newClient(t, s.Config)
	installCRD(t, c, g)
	createNamespace(t, c, ns)
	if large {
		require.NoError(t, c.Create(context.Background(), newInstance(g, ns, "large", map[string]any{"value": largeValue})))
	}
	lagging := lagInstances(t, g.Instance.GVK, instanceLag)
	provider, _ := providerFor(t, name, []*fgtesting.Cluster{s}, cacheopts.TrimCache, lagging)
	rt := startRuntime(t, fleet, provider, opts)
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))

	took = timeToActive(t, c, g, ns, "new", 3)
	inst, err := getInstance(t, c, g, ns, "new-0")
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(inst.Object, "b", "spec", "value"))
	start := time.Now()
	require.NoError(t, c.Update(context.Background(), inst))
	eventuallyWithin(t, 3*instanceLag, func() (bool, string) {
		u, err := configMap(c, ns, "new-0-right")
		if err != nil {
			return false, err.Error()
		}
		got, _, _ := unstructured.NestedString(u.Object, "data", "value")
		return got == "b", fmt.Sprintf("new-0-right has value %q", got)
	})
	return took, time.Since(start)
}

// TestOnlyALargeInstanceStartsTheMetadataWatch counts the metadata-only
// watches a runtime asks two spokes for on a graph's instance kind: none
// while the kind holds only small instances (they are reconciled through
// the instance informer alone, as before the metadata watch existed), one
// on the spoke where an instance larger than Options.InstanceHeadsAbove is
// created, still one after a second there, and none on the other spoke.
func TestOnlyALargeInstanceStartsTheMetadataWatch(t *testing.T) {
	t.Parallel()
	const name, above = "heads-lazy", 16 << 10
	g := compileAs(t, pairRGD, name)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	rt := spoke.New(spoke.Config{InstanceHeadsAbove: above})
	wg.Go(func() { _ = rt.Start(ctx) })
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	var clients []client.Client
	var watches []*metadataWatches
	for i, s := range sharedFleet(t).Spokes() {
		c, w := newClient(t, s.Config), &metadataWatches{}
		installCRD(t, c, g)
		createNamespace(t, c, name)
		cfg := rest.CopyConfig(s.Config)
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { w.next = rt; return w }
		cl, err := cluster.New(cfg, cacheopts.TrimCache)
		require.NoError(t, err)
		wg.Go(func() { _ = cl.Start(ctx) })
		require.True(t, cl.GetCache().WaitForCacheSync(ctx))
		require.NoError(t, rt.Engage(ctx, multicluster.ClusterName(fmt.Sprintf("spoke-%d", i)), cl))
		clients, watches = append(clients, c), append(watches, w)
	}
	plural := g.Instance.Plural

	for i, c := range clients {
		timeToActive(t, c, g, name, "small", 3)
		assert.Zero(t, watches[i].of(plural), "metadata-only watches of a kind with only small instances on spoke %d", i)
	}

	big := map[string]any{"value": strings.Repeat("x", above)}
	require.NoError(t, clients[0].Create(ctx, newInstance(g, name, "large-0", big)))
	eventually(t, func() (bool, string) {
		n := watches[0].of(plural)
		return n > 0, fmt.Sprintf("%d metadata-only watches of the kind", n)
	})
	stateIs(t, clients[0], g, name, "large-0", contract.StateActive)
	require.NoError(t, clients[0].Create(ctx, newInstance(g, name, "large-1", big)))
	stateIs(t, clients[0], g, name, "large-1", contract.StateActive)
	assert.Equal(t, 1, watches[0].of(plural), "metadata-only watches of the kind after a second large instance")
	timeToActive(t, clients[1], g, name, "later", 1)
	assert.Zero(t, watches[1].of(plural), "metadata-only watches of the kind on the spoke without a large instance")
}

// metadataWatches counts the metadata-only watch requests one client
// sends, by resource.
type metadataWatches struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (w *metadataWatches) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") == "true" && strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
		w.mu.Lock()
		if w.n == nil {
			w.n = map[string]int{}
		}
		w.n[path.Base(r.URL.Path)]++
		w.mu.Unlock()
	}
	return w.next.RoundTrip(r)
}

// of is how many metadata-only watches of resource were sent.
func (w *metadataWatches) of(resource string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[resource]
}

// lagInstances is a cluster option whose cache hands on the events of the
// informer of gvk (as unstructured objects), and answers reads of that
// kind, lag after the informer received them; the first list is handed
// on at once. Metadata-only informers of gvk are not delayed: their
// events are small whatever the objects' size.
func lagInstances(t *testing.T, gvk schema.GroupVersionKind, lag time.Duration) cluster.Option {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return func(o *cluster.Options) {
		next := o.NewCache
		if next == nil {
			next = cache.New
		}
		o.NewCache = func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
			c, err := next(cfg, opts)
			if err != nil {
				return nil, err
			}
			return &laggingCache{Cache: c, gvk: gvk, lag: lag, stop: stop, seen: map[types.NamespacedName]*unstructured.Unstructured{}}, nil
		}
	}
}

// laggingCache is a cache whose view of one unstructured kind is lag late.
type laggingCache struct {
	cache.Cache
	gvk  schema.GroupVersionKind
	lag  time.Duration
	stop chan struct{}

	mu   sync.Mutex
	seen map[types.NamespacedName]*unstructured.Unstructured // the late view
}

func (c *laggingCache) lagged(obj client.Object) bool {
	u, ok := obj.(*unstructured.Unstructured)
	return ok && u.GroupVersionKind() == c.gvk
}

func (c *laggingCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil || !c.lagged(obj) {
		return inf, err
	}
	return &laggingInformer{Informer: inf, c: c}, nil
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if !c.lagged(obj) {
		return c.Cache.Get(ctx, key, obj, opts...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.seen[key]
	if u == nil {
		return apierrors.NewNotFound(schema.GroupResource{Group: c.gvk.Group, Resource: c.gvk.Kind}, key.Name)
	}
	obj.(*unstructured.Unstructured).Object = u.DeepCopy().Object
	return nil
}

// see records an object (or its deletion) in the late view.
func (c *laggingCache) see(obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if deleted {
		delete(c.seen, key)
	} else {
		c.seen[key] = u
	}
}

// laggingInformer hands each handler's events on lag late, in order.
type laggingInformer struct {
	cache.Informer
	c *laggingCache
}

func (i *laggingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	l := &lateHandler{c: i.c, h: h, events: make(chan lateEvent, 10_000)}
	go l.run()
	return i.Informer.AddEventHandler(l)
}

// lateEvent is an event and when it was received.
type lateEvent struct {
	at      time.Time
	deliver func()
}

// lateHandler passes events to h lag after it gets them, except the
// informer's first list.
type lateHandler struct {
	c      *laggingCache
	h      toolscache.ResourceEventHandler
	events chan lateEvent
}

func (l *lateHandler) later(f func()) {
	select {
	case l.events <- lateEvent{at: time.Now(), deliver: f}:
	case <-l.c.stop:
	}
}

func (l *lateHandler) OnAdd(obj any, initial bool) {
	if initial {
		l.c.see(obj, false)
		l.h.OnAdd(obj, true)
		return
	}
	l.later(func() { l.c.see(obj, false); l.h.OnAdd(obj, false) })
}

func (l *lateHandler) OnUpdate(oldObj, newObj any) {
	l.later(func() { l.c.see(newObj, false); l.h.OnUpdate(oldObj, newObj) })
}

func (l *lateHandler) OnDelete(obj any) {
	l.later(func() { l.c.see(obj, true); l.h.OnDelete(obj) })
}

// run delivers the events in order, each lag after it came, until the
// test ends.
func (l *lateHandler) run() {
	for {
		select {
		case <-l.c.stop:
			return
		case e := <-l.events:
			timer := time.NewTimer(time.Until(e.at.Add(l.c.lag)))
			select {
			case <-l.c.stop:
				timer.Stop()
				return
			case <-timer.C:
			}
			e.deliver()
		}
	}
}
