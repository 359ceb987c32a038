package clustervalues

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/json"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// object is one accepted ClusterValues object, parsed.
type object struct {
	name     string
	graph    string // "" for every graph
	selector labels.Selector
	values   map[string]any
}

// before orders objects as they merge: every graph's first, then by name.
func before(a, b *object) int {
	if (a.graph == "") != (b.graph == "") {
		if a.graph == "" {
			return -1
		}
		return 1
	}
	return strings.Compare(a.name, b.name)
}

// matches reports whether o gives values to graphName on a cluster with
// these labels.
func (o *object) matches(graphName string, set labels.Set) bool {
	return (o.graph == "" || o.graph == graphName) && o.selector.Matches(set)
}

// Verdict is what the Store made of one object: accepted, or why not.
type Verdict struct {
	// Reason is fgv1alpha1.ReasonValuesAccepted or why the object was
	// refused.
	Reason string
	// Message explains a refusal.
	Message string
}

// Accepted reports whether the object is used.
func (v Verdict) Accepted() bool { return v.Reason == fgv1alpha1.ReasonValuesAccepted }

// Store holds the accepted objects, in merge order. Its methods are safe
// for concurrent use; the maps Values returns share their values with the
// Store and with each other, and are only read.
type Store struct {
	mu   sync.RWMutex
	objs []*object
	// specs names the specs objs were parsed from: each item's name, UID
	// and generation, in name order.
	specs string
}

// specsOf names the specs of items, so that a Set of the same specs (only
// their status changed) is told from a change.
func specsOf(items []fgv1alpha1.ClusterValues) string {
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = fmt.Sprintf("%s/%s/%d", items[i].Name, items[i].UID, items[i].Generation)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// Changed reports whether items hold other specs than the Store's.
func (s *Store) Changed(items []fgv1alpha1.ClusterValues) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.specs != specsOf(items)
}

// Set replaces the Store's objects with items, and returns the verdict on
// each, by name.
func (s *Store) Set(items []fgv1alpha1.ClusterValues) map[string]Verdict {
	verdicts := make(map[string]Verdict, len(items))
	objs := make([]*object, 0, len(items))
	for i := range items {
		o, v := parse(&items[i])
		verdicts[items[i].Name] = v
		if o != nil {
			objs = append(objs, o)
		}
	}
	slices.SortFunc(objs, before)
	specs := specsOf(items)
	s.mu.Lock()
	s.objs, s.specs = objs, specs
	s.mu.Unlock()
	return verdicts
}

// parse checks one object: its selector, its values' size and shape.
func parse(cv *fgv1alpha1.ClusterValues) (*object, Verdict) {
	raw := cv.Spec.Values.Raw
	if len(raw) > fgv1alpha1.MaxClusterValuesBytes {
		return nil, Verdict{Reason: fgv1alpha1.ReasonValuesTooLarge,
			Message: fmt.Sprintf("spec.values is %d bytes of JSON, more than %d (MaxClusterValuesBytes)", len(raw), fgv1alpha1.MaxClusterValuesBytes)}
	}
	sel := labels.Everything()
	if cv.Spec.ClusterSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(cv.Spec.ClusterSelector); err != nil {
			return nil, Verdict{Reason: fgv1alpha1.ReasonInvalidSelector, Message: "spec.clusterSelector: " + err.Error()}
		}
	}
	values := map[string]any{}
	if len(raw) > 0 {
		// util/json decodes whole numbers as int64, as the API server does,
		// so that 3 reads as an int in CEL, not a double.
		if err := json.Unmarshal(raw, &values); err != nil || values == nil {
			return nil, Verdict{Reason: fgv1alpha1.ReasonInvalidValues, Message: "spec.values must be a JSON object"}
		}
	}
	return &object{name: cv.Name, graph: cv.Spec.Graph, selector: sel, values: values},
		Verdict{Reason: fgv1alpha1.ReasonValuesAccepted, Message: "the values are given to the graphs on the clusters the selector matches"}
}

// Values returns the values graphName reads on a cluster with these
// labels: the merge of every object that gives it values there, nil when
// none does.
func (s *Store) Values(graphName string, clusterLabels map[string]string) map[string]any {
	s.mu.RLock()
	objs := s.objs
	s.mu.RUnlock()
	var out map[string]any
	set := labels.Set(clusterLabels)
	for _, o := range objs {
		if !o.matches(graphName, set) {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(o.values))
		}
		maps.Copy(out, o.values)
	}
	return out
}
