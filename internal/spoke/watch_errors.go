package spoke

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
// kind, whether the last one failed; the runtime counts the failures in
// metrics, requeues the instances of the graphs that use a kind when it
// starts or stops failing, and shows the failure as the instance's
// ResourcesWatched condition until a list or watch of that kind succeeds.
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

// ConditionResourcesWatched is the instance condition that is present, with
// status False, while the watch of a kind the instance's graph uses fails
// on its cluster; it is removed when the watch works again. It does not
// change the instance's state or Ready: the children may be fine, only
// their changes are not seen.
const ConditionResourcesWatched = "ResourcesWatched"

// reasonWatchFailed is ResourcesWatched's reason.
const reasonWatchFailed = "WatchFailed"

// maxWatchErrorMessage bounds the error text shown per kind.
const maxWatchErrorMessage = 300

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

// ReportWatchErrors is a cluster.Option that lets the Runtime learn of the
// cluster cache's failing informers (see ConditionResourcesWatched). It
// wraps the options' NewCache and the cache's NewInformer, keeping any the
// options set already.
func ReportWatchErrors(o *cluster.Options) {
	h := &watchHealth{kinds: map[schema.GroupVersionKind]error{}, listeners: map[healthListener]map[schema.GroupVersionKind]bool{}}
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
	health *watchHealth
}

var _ cache.Cache = &reportingCache{}

// healthOf returns the watch health of cl's cache, nil if cl was built
// without ReportWatchErrors.
func healthOf(cl cluster.Cluster) *watchHealth {
	if c, ok := cl.GetCache().(*reportingCache); ok {
		return c.health
	}
	return nil
}

// healthListener is told when a kind it listens to starts or stops failing.
type healthListener interface {
	watchHealthChanged(gvk schema.GroupVersionKind)
}

// watchHealth is what one cluster's informers last reported, per kind. Its
// metrics carry the cluster's name while some listener listens (the name
// comes from the Runtime, which knows it; the cache does not).
type watchHealth struct {
	mu        sync.Mutex
	cluster   string                            // "" while nobody listens
	kinds     map[schema.GroupVersionKind]error // failing kinds and their last error
	listeners map[healthListener]map[schema.GroupVersionKind]bool
}

// observing wraps newInformer (nil: client-go's) so that the informers it
// builds report their list and watch results to h.
func (h *watchHealth) observing(newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer, scheme *runtime.Scheme) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
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
	h     *watchHealth
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
func (h *watchHealth) observe(ctx context.Context, gvk schema.GroupVersionKind, err error) {
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

func (h *watchHealth) failed(gvk schema.GroupVersionKind, err error) {
	h.mu.Lock()
	_, was := h.kinds[gvk]
	h.kinds[gvk] = err
	if h.cluster != "" {
		watchErrorsTotal.WithLabelValues(h.cluster, kindName(gvk)).Inc()
		watchesFailing.WithLabelValues(h.cluster, kindName(gvk)).Set(1)
	}
	ls := h.listenersLocked(gvk, was)
	h.mu.Unlock()
	notify(ls, gvk)
}

func (h *watchHealth) recovered(gvk schema.GroupVersionKind) {
	h.mu.Lock()
	_, was := h.kinds[gvk]
	if !was {
		h.mu.Unlock()
		return
	}
	delete(h.kinds, gvk)
	if h.cluster != "" {
		watchesFailing.WithLabelValues(h.cluster, kindName(gvk)).Set(0)
	}
	ls := h.listenersLocked(gvk, false)
	h.mu.Unlock()
	notify(ls, gvk)
}

// listenersLocked returns gvk's listeners unless unchanged is set: only a
// kind starting or stopping to fail is news.
func (h *watchHealth) listenersLocked(gvk schema.GroupVersionKind, unchanged bool) []healthListener {
	if unchanged {
		return nil
	}
	var out []healthListener
	for l, kinds := range h.listeners {
		if kinds[gvk] {
			out = append(out, l)
		}
	}
	return out
}

func notify(ls []healthListener, gvk schema.GroupVersionKind) {
	for _, l := range ls {
		l.watchHealthChanged(gvk)
	}
}

// listen makes l hear of gvk's changes on the cluster named cluster; the
// cluster's metrics carry that name from then on.
func (h *watchHealth) listen(cluster string, l healthListener, gvk schema.GroupVersionKind) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cluster == "" {
		h.cluster = cluster
		for k := range h.kinds {
			watchesFailing.WithLabelValues(cluster, kindName(k)).Set(1)
		}
	}
	if h.listeners[l] == nil {
		h.listeners[l] = map[schema.GroupVersionKind]bool{}
	}
	h.listeners[l][gvk] = true
}

// forget stops telling l anything. When the last listener goes, the
// cluster's series are dropped: no graph is served there any more.
func (h *watchHealth) forget(l healthListener) {
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

// failing returns the last error of each of kinds that fails, by kind.
func (h *watchHealth) failing(kinds []schema.GroupVersionKind) map[schema.GroupVersionKind]error {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[schema.GroupVersionKind]error{}
	for _, k := range kinds {
		if err, ok := h.kinds[k]; ok {
			out[k] = err
		}
	}
	return out
}

// watchFailed is the ResourcesWatched condition for the failing kinds,
// nil when none fails, naming each kind and its error, sorted.
func watchFailed(failing map[schema.GroupVersionKind]error) *condition {
	if len(failing) == 0 {
		return nil
	}
	parts := make([]string, 0, len(failing))
	for k, err := range failing {
		msg := err.Error()
		if len(msg) > maxWatchErrorMessage {
			msg = msg[:maxWatchErrorMessage] + "..."
		}
		parts = append(parts, fmt.Sprintf("watch of %s failing: %s", kindName(k), msg))
	}
	slices.Sort(parts)
	return &condition{ConditionResourcesWatched, "False", reasonWatchFailed,
		strings.Join(parts, "; ") + " (changes to these objects are not seen until the watch recovers)"}
}

var _ healthListener = &member{}

// listenHealth makes the member hear when gvk starts or stops failing on
// its cluster, until the member ends. A cluster built without
// ReportWatchErrors has nothing to tell.
func (m *member) listenHealth(gvk schema.GroupVersionKind) {
	h := healthOf(m.cl)
	if h == nil {
		return
	}
	h.listen(m.cluster.String(), m, gvk)
	m.addCleanup(func() { h.forget(m) })
}

// watchHealthChanged requeues every instance the member serves: each uses
// the graph's kinds, and a status that shows the change is written only
// by a reconcile.
func (m *member) watchHealthChanged(gvk schema.GroupVersionKind) {
	if m.ctx.Err() != nil {
		return
	}
	if gvk == m.g.Instance.GVK {
		m.instanceKindChanged()
	}
	m.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(m.states))
	for k := range m.states {
		keys = append(keys, k)
	}
	m.mu.Unlock()
	for _, k := range keys {
		m.enqueue(k)
	}
}

// watchCondition is the ResourcesWatched condition of inst: nil unless the
// watch of one of the graph's kinds, or of a kind inst references, fails.
func (m *member) watchCondition(inst *unstructured.Unstructured) *condition {
	h := healthOf(m.cl)
	if h == nil {
		return nil
	}
	kinds := slices.Clone(m.kinds)
	m.mu.Lock()
	for _, r := range m.refs[keyOf(inst)] {
		kinds = append(kinds, r.gvk)
	}
	m.mu.Unlock()
	return watchFailed(h.failing(kinds))
}

// withWatchCondition replaces the ResourcesWatched entry of wire (the
// conditions to show) with c, dated against what inst shows; with c nil
// the entry goes.
func withWatchCondition(wire []any, inst *unstructured.Unstructured, c *condition) []any {
	wire = slices.DeleteFunc(wire, func(e any) bool {
		cm, _ := e.(map[string]any)
		return str(cm["type"]) == ConditionResourcesWatched
	})
	if c == nil {
		return wire
	}
	return append(wire, dated(wireConditions(inst), []condition{*c}, inst.GetGeneration())...)
}

// kindName names a kind in metrics and messages as group/version/Kind
// (v1/ConfigMap for the core group).
func kindName(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + "/" + gvk.Kind
}

// observedInformer is the informer of a kind the runtime watches on its own
// (outside the cluster's cache) over lw: it reports its calls' results to
// the cluster's watch health, when the cluster has one.
func (m *member) observedInformer(gvk schema.GroupVersionKind, lw *toolscache.ListWatch) toolscache.SharedIndexInformer {
	var through toolscache.ListerWatcher = lw
	if h := healthOf(m.cl); h != nil {
		through = observedLW{inner: lw, raw: lw, h: h, gvk: gvk}
	}
	return toolscache.NewSharedIndexInformer(through, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
}
