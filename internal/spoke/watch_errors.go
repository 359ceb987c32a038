package spoke

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
)

// A watch that fails in the background is made visible on the instances
// it serves: cacheopts.ReportWatchErrors, given to the provider, records
// per kind whether the cluster cache's informers fail (and counts the
// failures); here the runtime listens to that record for the kinds each
// graph uses, requeues the graph's instances when a kind starts or stops
// failing, and shows the failure as the instance's ResourcesWatched
// condition until a list or watch of that kind succeeds.

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
		parts = append(parts, fmt.Sprintf("watch of %s failing: %s", cacheopts.KindName(k), msg))
	}
	slices.Sort(parts)
	return &condition{ConditionResourcesWatched, "False", reasonWatchFailed,
		strings.Join(parts, "; ") + " (changes to these objects are not seen until the watch recovers)"}
}

var _ cacheopts.Listener = &member{}

// listenHealth makes the member hear when gvk starts or stops failing on
// its cluster, until the member ends. A cluster built without
// ReportWatchErrors has nothing to tell.
func (m *member) listenHealth(gvk schema.GroupVersionKind) {
	h := cacheopts.HealthOf(m.cl)
	if h == nil {
		return
	}
	h.Listen(m.cluster.String(), m, gvk)
	m.addCleanup(func() { h.Forget(m) })
}

// WatchHealthChanged requeues every instance the member serves: each uses
// the graph's kinds, and a status that shows the change is written only
// by a reconcile.
func (m *member) WatchHealthChanged(gvk schema.GroupVersionKind) {
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
	h := cacheopts.HealthOf(m.cl)
	if h == nil {
		return nil
	}
	kinds := slices.Clone(m.kinds)
	m.mu.Lock()
	for _, r := range m.refs[keyOf(inst)] {
		kinds = append(kinds, r.gvk)
	}
	m.mu.Unlock()
	return watchFailed(h.Failing(kinds))
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

// observedInformer is the informer of a kind the runtime watches on its own
// (outside the cluster's cache) over lw: it reports its calls' results to
// the cluster's watch health, when the cluster has one.
func (m *member) observedInformer(gvk schema.GroupVersionKind, lw *toolscache.ListWatch) toolscache.SharedIndexInformer {
	through := cacheopts.HealthOf(m.cl).Observe(gvk, lw)
	return toolscache.NewSharedIndexInformer(through, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
}
