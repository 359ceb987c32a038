package instance

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
)

// A watch that fails in the background is made visible on the instances
// it serves: cacheopts.ReportWatchErrors, given to the provider, records
// per kind whether the cluster cache's informers fail (and counts the
// failures); the engine listens to that record for the kinds it uses in
// each cluster (watch.go), has the driver requeue the graph's instances
// when a kind starts or stops failing, and shows the failure as the
// instance's ResourcesWatched condition until a list or watch of that kind
// succeeds.

// ConditionResourcesWatched is the condition the status writer adds while
// watchCondition finds a failing watch, and drops once none fails; it
// leaves the state and Ready as they are (the public
// spoke.ConditionResourcesWatched documents it).
const ConditionResourcesWatched = "ResourcesWatched"

// reasonWatchFailed is ResourcesWatched's reason.
const reasonWatchFailed = "WatchFailed"

// maxWatchErrorMessage bounds the error text shown per kind.
const maxWatchErrorMessage = 300

// watchFailed is the ResourcesWatched condition for the failing kinds,
// nil when none fails, naming each kind (and, where, its cluster when it
// is not the instance's own) and its error, sorted.
func watchFailed(failing map[schema.GroupVersionKind]error, where string) *Condition {
	parts := watchFailures(failing, where)
	if len(parts) == 0 {
		return nil
	}
	return failingWatches(parts)
}

func failingWatches(parts []string) *Condition {
	slices.Sort(parts)
	return &Condition{ConditionResourcesWatched, "False", reasonWatchFailed,
		strings.Join(parts, "; ") + " (changes to these objects are not seen until the watch recovers)"}
}

// watchFailures describes each failing kind and its error.
func watchFailures(failing map[schema.GroupVersionKind]error, where string) []string {
	parts := make([]string, 0, len(failing))
	for k, err := range failing {
		msg := err.Error()
		if len(msg) > maxWatchErrorMessage {
			msg = msg[:maxWatchErrorMessage] + "..."
		}
		parts = append(parts, fmt.Sprintf("watch of %s%s failing: %s", cacheopts.KindName(k), where, msg))
	}
	return parts
}

// watchCondition is the ResourcesWatched condition of inst: nil unless the
// watch of one of the graph's kinds, or of a kind inst references, fails
// in a cluster the engine writes or reads in.
func (w statusWriter) watchCondition(inst *unstructured.Unstructured) *Condition {
	e := w.e
	kinds := append(slices.Clone([]schema.GroupVersionKind(e.kinds)), e.refs.kinds(keyOf(inst))...)
	var parts []string
	homeSeen := false
	for _, p := range e.places.all() {
		homeSeen = homeSeen || p.home()
		if h := cacheopts.HealthOf(p.c.Cluster); h != nil {
			parts = append(parts, watchFailures(h.Failing(kinds), p.where())...)
		}
	}
	if h := cacheopts.HealthOf(e.home.Cluster); !homeSeen && h != nil {
		parts = append(parts, watchFailures(h.Failing(kinds), "")...)
	}
	if len(parts) == 0 {
		return nil
	}
	return failingWatches(parts)
}

// withWatchCondition replaces the ResourcesWatched entry of wire (the
// conditions to show) with c, dated against what inst shows; with c nil
// the entry goes.
func withWatchCondition(wire []any, inst *unstructured.Unstructured, c *Condition) []any {
	wire = slices.DeleteFunc(wire, func(e any) bool {
		cm, _ := e.(map[string]any)
		return str(cm["type"]) == ConditionResourcesWatched
	})
	if c == nil {
		return wire
	}
	return append(wire, dated(wireConditions(inst), []Condition{*c}, inst.GetGeneration())...)
}
