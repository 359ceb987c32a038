package placementdecision

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kro "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// SchedulerName is the schedulerName of the slices fleetgraph publishes.
const SchedulerName = "fleetgraph"

// Errors Publish returns (wrapped, with the object named).
var (
	// ErrNotOurs: a PlacementDecision of a slice's name exists that
	// fleetgraph did not write; it is left as it is and nothing of the
	// graph's decision is written.
	ErrNotOurs = errors.New("PlacementDecision exists and fleetgraph did not write it")
	// ErrNotLabel: the graph's name cannot be a label value (longer than
	// 63 characters), so it cannot be a decision key.
	ErrNotLabel = errors.New("the graph's name cannot be a decision key")
)

// Scheme returns a new scheme with the PlacementDecision types, for a
// client of the hub that reads and writes them.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(ciav1alpha1.AddToScheme(s))
	return s
}

// Slices returns the slices that publish clusters (in any order) as the
// decision of graphName in namespace: sorted by name, at most MaxPerSlice
// a slice, slice i named <graph>-<i>; no cluster is one empty slice, so
// that readers see a decision of none rather than no decision.
func Slices(graphName, namespace string, clusters []string) ([]*ciav1alpha1.PlacementDecision, error) {
	if errs := validation.IsValidLabelValue(graphName); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotLabel, graphName)
	}
	names := slices.Clone(clusters)
	slices.Sort(names)
	names = slices.Compact(names)
	n := max(1, (len(names)+MaxPerSlice-1)/MaxPerSlice)
	out := make([]*ciav1alpha1.PlacementDecision, n)
	for i := range out {
		chunk := names[min(i*MaxPerSlice, len(names)):min((i+1)*MaxPerSlice, len(names))]
		d := make([]ciav1alpha1.ClusterDecision, len(chunk))
		for j, c := range chunk {
			d[j].ClusterProfileRef.Name = c
		}
		out[i] = &ciav1alpha1.PlacementDecision{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace, Name: graphName + "-" + strconv.Itoa(i),
				Labels: map[string]string{
					kro.LabelManagedBy:             kro.ManagedByFleetgraph,
					ciav1alpha1.DecisionKeyLabel:   graphName,
					ciav1alpha1.PlacementKeyLabel:  graphName,
					ciav1alpha1.DecisionIndexLabel: strconv.Itoa(i),
				},
			},
			Decisions:     d,
			SchedulerName: SchedulerName,
		}
	}
	return out, nil
}

// Publisher writes graphs' decisions to one hub namespace. Its methods
// are called from one goroutine.
type Publisher struct {
	// Client reads and writes PlacementDecisions on the hub, live; its
	// scheme knows them (Scheme).
	Client client.Client
	// Namespace holds the published decisions.
	Namespace string
	// FieldManager writes them; a slice is fleetgraph's only when this
	// manager wrote it and it carries fleetgraph's managed-by label.
	FieldManager string
}

// Published is what a Publisher finds of its own: per graph (placement
// key), its slices by name.
type Published map[string]map[string]*ciav1alpha1.PlacementDecision

// List returns the slices fleetgraph published in the namespace.
func (p *Publisher) List(ctx context.Context) (Published, error) {
	list := &ciav1alpha1.PlacementDecisionList{}
	if err := p.Client.List(ctx, list, client.InNamespace(p.Namespace),
		client.MatchingLabels{kro.LabelManagedBy: kro.ManagedByFleetgraph}); err != nil {
		return nil, fmt.Errorf("listing published PlacementDecisions in %s: %w", p.Namespace, err)
	}
	out := Published{}
	for i := range list.Items {
		s := &list.Items[i]
		g := s.Labels[ciav1alpha1.PlacementKeyLabel]
		if g == "" || !p.ours(s) {
			continue
		}
		if out[g] == nil {
			out[g] = map[string]*ciav1alpha1.PlacementDecision{}
		}
		out[g][s.Name] = s
	}
	return out, nil
}

// Publish makes graphName's published decision list exactly clusters,
// given what List found (mine, the graph's entry). It first checks that
// every slice it would create is free: one that someone else wrote
// refuses the whole publication (ErrNotOurs) and nothing is written. It
// returns how many slices the decision spans.
func (p *Publisher) Publish(ctx context.Context, graphName string, clusters []string, mine map[string]*ciav1alpha1.PlacementDecision) (int, error) {
	want, err := Slices(graphName, p.Namespace, clusters)
	if err != nil {
		return 0, err
	}
	for _, w := range want {
		if mine[w.Name] == nil {
			if err := p.checkFree(ctx, w.Name); err != nil {
				return 0, err
			}
		}
	}
	for _, w := range want {
		if err := p.write(ctx, w, mine[w.Name]); err != nil {
			return 0, err
		}
	}
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(mine)) {
		if !wanted[name] {
			if err := p.delete(ctx, mine[name]); err != nil {
				return 0, err
			}
		}
	}
	return len(want), nil
}

// Prune deletes the published decisions of every graph keep does not
// name.
func (p *Publisher) Prune(ctx context.Context, found Published, keep map[string]bool) error {
	var errs []error
	for _, g := range slices.Sorted(maps.Keys(found)) {
		if keep[g] {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(found[g])) {
			errs = append(errs, p.delete(ctx, found[g][name]))
		}
	}
	return errors.Join(errs...)
}

// checkFree returns ErrNotOurs when a PlacementDecision named name exists
// that fleetgraph did not write.
func (p *Publisher) checkFree(ctx context.Context, name string) error {
	got := &ciav1alpha1.PlacementDecision{}
	switch err := p.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, got); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading PlacementDecision %s/%s: %w", p.Namespace, name, err)
	case !p.ours(got):
		return fmt.Errorf("%w: %s/%s", ErrNotOurs, p.Namespace, name)
	}
	return nil
}

// write creates w, or updates have (ours) to w when they differ. An
// update carries have's resourceVersion: it never writes over a change it
// did not see.
func (p *Publisher) write(ctx context.Context, w, have *ciav1alpha1.PlacementDecision) error {
	if have == nil {
		if err := p.Client.Create(ctx, w, client.FieldOwner(p.FieldManager)); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%w: %s/%s (created meanwhile)", ErrNotOurs, w.Namespace, w.Name)
			}
			return fmt.Errorf("creating PlacementDecision %s/%s: %w", w.Namespace, w.Name, err)
		}
		return nil
	}
	if same(w, have) {
		return nil
	}
	next := have.DeepCopy()
	maps.Copy(next.Labels, w.Labels)
	next.Decisions, next.SchedulerName = w.Decisions, w.SchedulerName
	if err := p.Client.Update(ctx, next, client.FieldOwner(p.FieldManager)); err != nil {
		return fmt.Errorf("updating PlacementDecision %s/%s: %w", w.Namespace, w.Name, err)
	}
	return nil
}

// delete deletes s, ours, unless it changed since it was read.
func (p *Publisher) delete(ctx context.Context, s *ciav1alpha1.PlacementDecision) error {
	err := p.Client.Delete(ctx, s, client.Preconditions{UID: &s.UID, ResourceVersion: &s.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting PlacementDecision %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// ours reports whether fleetgraph wrote s: it carries the managed-by
// label and our field manager wrote it (labels alone can be copied).
func (p *Publisher) ours(s *ciav1alpha1.PlacementDecision) bool {
	if s.Labels[kro.LabelManagedBy] != kro.ManagedByFleetgraph {
		return false
	}
	for _, m := range s.ManagedFields {
		if m.Manager == p.FieldManager {
			return true
		}
	}
	return false
}

// same reports whether have already publishes what w does.
func same(w, have *ciav1alpha1.PlacementDecision) bool {
	for k, v := range w.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	return have.SchedulerName == w.SchedulerName && equality.Semantic.DeepEqual(normal(have.Decisions), normal(w.Decisions))
}

// normal is decisions with nil for none, as the server returns them.
func normal(d []ciav1alpha1.ClusterDecision) []ciav1alpha1.ClusterDecision {
	if len(d) == 0 {
		return nil
	}
	return d
}
