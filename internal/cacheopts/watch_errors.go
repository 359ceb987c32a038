package cacheopts

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// This file makes watches that fail in the background visible. An informer
// whose list or watch fails (the hub's identity lost list/watch on a kind,
// the kind is no longer served, the spoke is unreachable) only logs and
// retries, so the instances it serves look healthy while changes to their
// children go unseen. ReportWatchErrors, a cluster.Option, observes every
// list and watch call of the cluster cache's informers and records, per
// kind, whether the last one failed (a Health). The spoke runtime reads
// it (HealthOf): it counts nothing itself, requeues the instances of the
// graphs that use a kind when it starts or stops failing, and shows the
// failure as the instance's ResourcesWatched condition until a list or
// watch of that kind succeeds. The failures are counted here, per cluster
// and kind.
//
// Why not cache.Options.DefaultWatchErrorHandler: it is called with the
// reflector, which for the metadata-only informers the runtime uses names
// its type only as *v1.PartialObjectMetadata, so the handler cannot tell
// which kind failed; and it is never called on success, so it cannot say
// when the watch works again. Wrapping the informer's ListerWatcher (through
// cache.Options.NewInformer) sees both, with the kind.
//
// A cluster built without the option (a third-party provider) works as
// before: its failures are only logged by client-go, and instances carry no
// ResourcesWatched condition.

var (
	watchErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetgraph_spoke_watch_errors_total",
		Help: "Failed list or watch calls of the informers of a spoke cluster's cache, by cluster and kind (group/version/Kind).",
	}, []string{"cluster", "kind"})
	watchesFailing = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fleetgraph_spoke_watches_failing",
		Help: "1 while the last list or watch call of a kind's informer on a spoke cluster failed, else 0.",
	}, []string{"cluster", "kind"})
)

func init() {
	metrics.Registry.MustRegister(watchErrorsTotal, watchesFailing)
}

// ReportWatchErrors is a cluster.Option that lets the spoke runtime learn
// of the cluster cache's failing informers (HealthOf). It wraps the
// options' NewCache and the cache's NewInformer, keeping any the options
// set already.
func ReportWatchErrors(o *cluster.Options) {
	h := newHealth()
	newCache := o.NewCache
	if newCache == nil {
		newCache = cache.New
	}
	o.NewCache = func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		opts.NewInformer = h.observing(opts.NewInformer, opts.Scheme)
		c, err := newCache(cfg, opts)
		if err != nil {
			return nil, err
		}
		return &reportingCache{Cache: c, health: h}, nil
	}
}

// reportingCache is a cluster's cache built with ReportWatchErrors.
type reportingCache struct {
	cache.Cache
	health *Health
}

var _ cache.Cache = &reportingCache{}

// HealthOf returns the watch health of cl's cache, nil if cl was built
// without ReportWatchErrors.
func HealthOf(cl cluster.Cluster) *Health {
	c := cl.GetCache()
	if u, ok := c.(Unwrapper); ok {
		c = u.Unwrap()
	}
	if c, ok := c.(*reportingCache); ok {
		return c.health
	}
	return nil
}

// Unwrapper is a cache that stands for another one, which Unwrap returns
// (a lazy cluster's cache, internal/lazycluster, which Unwrap builds).
type Unwrapper interface {
	Unwrap() cache.Cache
}

// Listener is told when a kind it listens to starts or stops failing. It
// is called from the informer's goroutine and must not block.
type Listener interface {
	WatchHealthChanged(gvk schema.GroupVersionKind)
}

// Health is what one cluster's informers last reported, per kind. Its
// metrics carry the cluster's name while some listener listens (the name
// comes from the runtime, which knows it; the cache does not). Its methods
// are safe for concurrent use; a nil *Health (a cluster built without
// ReportWatchErrors) has nothing to tell.
type Health struct {
	mu        sync.Mutex
	cluster   string                            // "" while nobody listens
	kinds     map[schema.GroupVersionKind]error // failing kinds and their last error
	listeners map[Listener]map[schema.GroupVersionKind]bool
}

func newHealth() *Health {
	return &Health{kinds: map[schema.GroupVersionKind]error{}, listeners: map[Listener]map[schema.GroupVersionKind]bool{}}
}

// observing wraps newInformer (nil: client-go's) so that the informers it
// builds report their list and watch results to h.
func (h *Health) observing(newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer, scheme *runtime.Scheme) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	if newInformer == nil {
		newInformer = toolscache.NewSharedIndexInformer
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if gvk.Empty() && scheme != nil {
			gvk, _ = apiutil.GVKForObject(obj, scheme)
		}
		if gvk.Empty() {
			return newInformer(lw, obj, resync, idx)
		}
		return newInformer(observedLW{inner: toolscache.ToListerWatcherWithContext(lw), raw: lw, h: h, gvk: gvk}, obj, resync, idx)
	}
}

// observedLW is a ListerWatcher that reports each call's result.
type observedLW struct {
	inner toolscache.ListerWatcherWithContext
	raw   toolscache.ListerWatcher
	h     *Health
	gvk   schema.GroupVersionKind
}

var _ toolscache.ListerWatcherWithContext = observedLW{}

func (o observedLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return o.ListWithContext(context.Background(), opts)
}

func (o observedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := o.inner.ListWithContext(ctx, opts)
	o.h.observe(ctx, o.gvk, err)
	return obj, err
}

func (o observedLW) Watch(opts metav1.ListOptions) (apiwatch.Interface, error) {
	return o.WatchWithContext(context.Background(), opts)
}

func (o observedLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	w, err := o.inner.WatchWithContext(ctx, opts)
	o.h.observe(ctx, o.gvk, err)
	if w == nil {
		return w, err
	}
	return &drainedWatch{Interface: w}, err
}

// drainedWatch reads what is left of a watch once it is stopped. A
// reflector that stops reads no further event, and apimachinery's
// watch.Filter (which controller-runtime's metadata informers put in front
// of every watch) then blocks for ever on its next send, one goroutine per
// stopped informer (kubernetes/kubernetes#113254). Reading until the
// channel closes lets it end.
type drainedWatch struct {
	apiwatch.Interface
	once sync.Once
}

func (d *drainedWatch) Stop() {
	d.Interface.Stop()
	d.once.Do(func() {
		go func() {
			for range d.ResultChan() { // until the watch closes it
			}
		}()
	})
}

// IsWatchListSemanticsUnSupported passes on what the wrapped ListerWatcher
// says, so the reflector streams lists exactly when it would without us.
func (o observedLW) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(o.raw)
}

// observe records one list or watch call's result. A call cut short by its
// context (the informer stopping) says nothing; an expired resource version
// is the normal way a reflector is told to list again.
func (h *Health) observe(ctx context.Context, gvk schema.GroupVersionKind, err error) {
	switch {
	case ctx.Err() != nil, errors.Is(err, context.Canceled):
		return
	case err == nil:
		h.recovered(gvk)
	case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return
	default:
		h.failed(gvk, err)
	}
}

func (h *Health) failed(gvk schema.GroupVersionKind, err error) {
	h.mu.Lock()
	_, was := h.kinds[gvk]
	h.kinds[gvk] = err
	if h.cluster != "" {
		watchErrorsTotal.WithLabelValues(h.cluster, KindName(gvk)).Inc()
		watchesFailing.WithLabelValues(h.cluster, KindName(gvk)).Set(1)
	}
	ls := h.listenersLocked(gvk, was)
	h.mu.Unlock()
	notify(ls, gvk)
}

func (h *Health) recovered(gvk schema.GroupVersionKind) {
	h.mu.Lock()
	_, was := h.kinds[gvk]
	if !was {
		h.mu.Unlock()
		return
	}
	delete(h.kinds, gvk)
	if h.cluster != "" {
		watchesFailing.WithLabelValues(h.cluster, KindName(gvk)).Set(0)
	}
	ls := h.listenersLocked(gvk, false)
	h.mu.Unlock()
	notify(ls, gvk)
}

// listenersLocked returns gvk's listeners unless unchanged is set: only a
// kind starting or stopping to fail is news.
func (h *Health) listenersLocked(gvk schema.GroupVersionKind, unchanged bool) []Listener {
	if unchanged {
		return nil
	}
	var out []Listener
	for l, kinds := range h.listeners {
		if kinds[gvk] {
			out = append(out, l)
		}
	}
	return out
}

func notify(ls []Listener, gvk schema.GroupVersionKind) {
	for _, l := range ls {
		l.WatchHealthChanged(gvk)
	}
}

// Listen makes l hear of gvk's changes on the cluster named cluster; the
// cluster's metrics carry that name from then on. It is a no-op on a nil
// Health.
func (h *Health) Listen(cluster string, l Listener, gvk schema.GroupVersionKind) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cluster == "" {
		h.cluster = cluster
		for k := range h.kinds {
			watchesFailing.WithLabelValues(cluster, KindName(k)).Set(1)
		}
	}
	if h.listeners[l] == nil {
		h.listeners[l] = map[schema.GroupVersionKind]bool{}
	}
	h.listeners[l][gvk] = true
}

// Forget stops telling l anything. When the last listener goes, the
// cluster's series are dropped: no graph is served there any more.
func (h *Health) Forget(l Listener) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.listeners, l)
	if len(h.listeners) == 0 && h.cluster != "" {
		labels := prometheus.Labels{"cluster": h.cluster}
		watchErrorsTotal.DeletePartialMatch(labels)
		watchesFailing.DeletePartialMatch(labels)
		h.cluster = ""
	}
}

// Failing returns the last error of each of kinds that fails, by kind;
// empty on a nil Health.
func (h *Health) Failing(kinds []schema.GroupVersionKind) map[schema.GroupVersionKind]error {
	out := map[schema.GroupVersionKind]error{}
	if h == nil {
		return out
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range kinds {
		if err, ok := h.kinds[k]; ok {
			out[k] = err
		}
	}
	return out
}

// Observe returns lw wrapped so that its calls' results are reported to h,
// for an informer of kind gvk the runtime runs on its own, outside the
// cluster's cache. On a nil Health it returns lw.
func (h *Health) Observe(gvk schema.GroupVersionKind, lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	if h == nil {
		return lw
	}
	return observedLW{inner: toolscache.ToListerWatcherWithContext(lw), raw: lw, h: h, gvk: gvk}
}

// KindName names a kind in metrics and messages as group/version/Kind
// (v1/ConfigMap for the core group).
func KindName(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + "/" + gvk.Kind
}
