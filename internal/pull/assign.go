package pull

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	kro "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// assignments are the cluster's GraphAssignments, from the cache.
func (s *Source) assignments(ctx context.Context, cluster string) []fgv1alpha1.GraphAssignment {
	list := &fgv1alpha1.GraphAssignmentList{}
	if err := s.reader().List(ctx, list, client.InNamespace(fgv1alpha1.PullNamespace(cluster))); err != nil {
		return nil
	}
	return list.Items
}

// reports are the cluster's GraphReports by graph, from the cache.
func (s *Source) reports(ctx context.Context, cluster string) map[string]*fgv1alpha1.GraphReport {
	list := &fgv1alpha1.GraphReportList{}
	if err := s.reader().List(ctx, list, client.InNamespace(fgv1alpha1.PullNamespace(cluster))); err != nil {
		return nil
	}
	out := make(map[string]*fgv1alpha1.GraphReport, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// assign writes the cluster's assignments where they differ from what the
// hub decides now: created, updated, or deleted when the hub leaves a
// graph out.
func (s *Source) assign(ctx context.Context, pc *fgv1alpha1.PullCluster) error {
	have := map[string]*fgv1alpha1.GraphAssignment{}
	items := s.assignments(ctx, pc.Name)
	for i := range items {
		have[items[i].Name] = &items[i]
	}
	reports := s.reports(ctx, pc.Name)
	want := s.plans.get(ctx).Assign(Cluster{Name: pc.Name, Labels: pc.Labels}, have, reports)
	if err := s.write(ctx, pc.Name, have, want); err != nil {
		return err
	}
	return s.collectReports(ctx, have, want, reports)
}

// collectReports deletes the reports of graphs that had no assignment
// before this pass and have none after it: the agent forgot them (a report
// written while it did is collected at the next pass).
func (s *Source) collectReports(ctx context.Context, have map[string]*fgv1alpha1.GraphAssignment, want map[string]fgv1alpha1.GraphAssignmentSpec, reports map[string]*fgv1alpha1.GraphReport) error {
	for name, r := range reports {
		if _, ok := have[name]; ok {
			continue
		}
		if _, ok := want[name]; ok {
			continue
		}
		if err := s.client.Delete(ctx, r, client.Preconditions{UID: &r.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the report of graph %s, which has no assignment: %w", name, err)
		}
	}
	return nil
}

// write makes the cluster's assignments want.
func (s *Source) write(ctx context.Context, cluster string, have map[string]*fgv1alpha1.GraphAssignment, want map[string]fgv1alpha1.GraphAssignmentSpec) error {
	for name, spec := range want {
		cur := have[name]
		switch {
		case cur == nil:
			a := &fgv1alpha1.GraphAssignment{
				ObjectMeta: metav1.ObjectMeta{Namespace: fgv1alpha1.PullNamespace(cluster), Name: name, Labels: map[string]string{
					fgv1alpha1.LabelPullCluster: cluster, kro.LabelManagedBy: kro.ManagedByFleetgraph,
				}},
				Spec: spec,
			}
			if err := s.client.Create(ctx, a, client.FieldOwner(s.opts.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("assigning graph %s: %w", name, err)
			}
			s.opts.Logger.V(1).Info("graph assigned to a pull cluster", "cluster", cluster, "graph", name, "revision", spec.Revision, "removal", spec.Removal)
		case !SameSpec(cur.Spec, spec):
			a := cur.DeepCopy()
			a.Spec = spec
			if err := s.client.Update(ctx, a, client.FieldOwner(s.opts.FieldManager)); err != nil {
				return fmt.Errorf("updating the assignment of graph %s: %w", name, err)
			}
			s.opts.Logger.V(1).Info("pull cluster's assignment changed", "cluster", cluster, "graph", name,
				"revision", spec.Revision, "was", cur.Spec.Revision, "removal", spec.Removal)
		}
	}
	for name, cur := range have {
		if _, ok := want[name]; ok {
			continue
		}
		err := s.client.Delete(ctx, cur, client.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("taking graph %s off the cluster: %w", name, err)
		}
		s.opts.Logger.V(1).Info("graph's assignment deleted from a pull cluster", "cluster", cluster, "graph", name)
	}
	return nil
}

// SameSpec reports whether two assignments say the same, compared as
// JSON values: what the API server gives back (templates re-encoded,
// keys sorted) equals what the hub wrote.
func SameSpec(a, b fgv1alpha1.GraphAssignmentSpec) bool {
	return equality.Semantic.DeepEqual(jsonValue(a), jsonValue(b))
}

func jsonValue(spec fgv1alpha1.GraphAssignmentSpec) any {
	if spec.Values != nil && (len(spec.Values.Raw) == 0 || string(spec.Values.Raw) == "{}" || string(spec.Values.Raw) == "null") {
		spec.Values = nil
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err.Error()
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err.Error()
	}
	return v
}
