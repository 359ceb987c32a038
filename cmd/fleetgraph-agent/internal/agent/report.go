package agent

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/hub"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// servedView is a copy of one served graph's fields, read under the
// agent's lock.
type servedView struct {
	name       string
	generation int64
	spec       fgv1alpha1.GraphAssignmentSpec
	version    spoke.Version
	compileErr error
	previous   *servedRecord
	reported   *fgv1alpha1.GraphReportStatus
	crdDeleted bool
	crdMessage string
}

func (a *Agent) view(name string) (servedView, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.graphs[name]
	if s == nil {
		return servedView{}, false
	}
	return servedView{
		name: s.name, generation: s.generation, spec: s.spec, version: s.version, compileErr: s.compileErr,
		previous: s.previous, reported: s.reported, crdDeleted: s.crdDeleted, crdMessage: s.crdMessage,
	}, true
}

// report writes each graph's report when it changed, every
// ReportInterval: a report the hub did not take is tried again at the
// next one. While the hub does not answer, the first failure ends the
// pass, so that a pass costs one request timeout at most.
func (a *Agent) report(ctx context.Context) {
	every(ctx, a.opts.ReportInterval, func() {
		for _, name := range a.graphNames() {
			s, ok := a.view(name)
			if !ok {
				continue
			}
			a.rememberServed(ctx, s)
			st := a.statusOf(ctx, s)
			if s.reported != nil && equality.Semantic.DeepEqual(*s.reported, st) {
				continue
			}
			err := a.writeReport(ctx, name, st)
			a.hubAnswered(ctx, err == nil) // hubcache.go
			if err != nil {
				a.opts.Logger.V(1).Info("report not written; retrying", "graph", name, "reason", err.Error())
				return
			}
			a.mu.Lock()
			if cur := a.graphs[name]; cur != nil {
				cur.reported = &st
			}
			a.mu.Unlock()
		}
	})
}

// statusOf is the report of one graph now (its Time left zero).
func (a *Agent) statusOf(ctx context.Context, s servedView) fgv1alpha1.GraphReportStatus {
	st := fgv1alpha1.GraphReportStatus{
		ObservedGeneration: s.generation,
		AssignedRevision:   s.spec.Revision,
		CRD:                a.crdState(s),
	}
	if v, ok := a.rt.Served(s.name)[mcmanager.LocalCluster]; ok && v.Graph != nil {
		st.Served = &fgv1alpha1.ReportedRevision{Revision: v.Revision, Generation: v.Graph.Generation}
		c := a.rt.Counts(s.name)[mcmanager.LocalCluster]
		st.Instances = fgv1alpha1.ReportedInstances{
			Counted: true, Total: int32(c.Total), Ready: int32(c.Ready), Confirmed: int32(c.Confirmed), Errors: int32(c.Errors),
		}
	}
	if s.spec.Removal != "" {
		st.Removal = a.removal(ctx, s) // crd.go
	}
	st.Health = a.health(ctx, s) // health.go
	return st
}

// crdState is the assigned revision's CRD on the cluster, as the fan-out
// recorded its last attempt; Pending until an attempt at that revision.
func (a *Agent) crdState(s servedView) fgv1alpha1.ReportedCRD {
	rev, gen := s.spec.Revision, s.spec.Snapshot.Generation
	out := fgv1alpha1.ReportedCRD{State: string(hub.CRDPending), Revision: rev, Generation: gen}
	switch {
	case s.compileErr != nil:
		out.State, out.Message = string(hub.CRDIncompatible), bounded(s.compileErr.Error())
		return out
	case s.crdDeleted:
		out.State, out.Message = string(hub.CRDPending), "the CRD was deleted, as the graph's removal asked"
		return out
	}
	for _, c := range a.fanOut.Status(s.name).Clusters {
		if c.Cluster != string(mcmanager.LocalCluster) || c.Generation != gen {
			continue
		}
		out.State, out.Message = string(c.CRD), bounded(c.Message)
		if !c.Since.IsZero() {
			since := metav1.NewTime(c.Since.Truncate(time.Second))
			out.Since = &since
		}
	}
	if out.State == string(hub.CRDPending) && s.spec.Removal != "" {
		out.Message = "being removed"
	}
	return out
}

// rememberServed keeps, in the agent's state, the revision serving the
// cluster when it changed: after a restart it serves until the assigned
// one's gate passes again.
func (a *Agent) rememberServed(ctx context.Context, s servedView) {
	v, ok := a.rt.Served(s.name)[mcmanager.LocalCluster]
	if !ok || v.Graph == nil || v.Graph != s.version.Graph {
		return // nothing serves, or the previous (kept) revision still does
	}
	if s.previous != nil && s.previous.Revision == v.Revision && sameSpec(
		fgv1alpha1.GraphAssignmentSpec{Snapshot: s.previous.Snapshot}, fgv1alpha1.GraphAssignmentSpec{Snapshot: s.spec.Snapshot}) {
		return
	}
	rec := stateRecord{Graph: s.name, Generation: s.generation, Assignment: s.spec,
		Served: &servedRecord{Revision: v.Revision, Snapshot: s.spec.Snapshot}}
	if err := a.state.save(ctx, rec); err != nil {
		a.opts.Logger.Info("keeping the revision that serves the cluster; retrying", "graph", s.name, "reason", err.Error())
		return
	}
	a.mu.Lock()
	if cur := a.graphs[s.name]; cur != nil && cur.generation == s.generation {
		cur.previous = rec.Served
	}
	a.mu.Unlock()
}

// writeReport writes one graph's report with server-side apply: one
// request creates or updates it.
func (a *Agent) writeReport(ctx context.Context, name string, st fgv1alpha1.GraphReportStatus) error {
	st.Time = metav1.NewTime(time.Now().Truncate(time.Second))
	rep := &fgv1alpha1.GraphReport{
		TypeMeta:   metav1.TypeMeta{APIVersion: fgv1alpha1.GroupVersion.String(), Kind: fgv1alpha1.GraphReportKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: a.opts.namespace(), Name: name},
		Status:     st,
	}
	u, err := toApply(rep)
	if err != nil {
		return err
	}
	return a.hubClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(a.opts.FieldManager), client.ForceOwnership)
}

// heartbeat renews the agent's Lease every RenewInterval.
func (a *Agent) heartbeat(ctx context.Context) {
	every(ctx, a.opts.RenewInterval, func() {
		now := metav1.NewMicroTime(time.Now())
		l := &coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Namespace: a.opts.namespace(), Name: fgv1alpha1.PullAgentName},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(a.opts.Cluster),
				LeaseDurationSeconds: ptr.To(int32(3 * a.opts.RenewInterval / time.Second)),
				RenewTime:            &now,
			},
		}
		u, err := toApply(l)
		if err == nil {
			err = a.hubClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(a.opts.FieldManager), client.ForceOwnership)
		}
		a.hubAnswered(ctx, err == nil) // hubcache.go
		if err != nil {
			a.opts.Logger.V(1).Info("heartbeat not renewed; retrying", "reason", err.Error())
		}
	})
}

// toApply renders a typed object, its type meta set, as an apply intent:
// no server-owned metadata.
func toApply(obj runtime.Object) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: content}
	for _, f := range []string{"creationTimestamp", "resourceVersion", "uid", "managedFields"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	return u, nil
}

// bounded cuts a message to what a report holds.
func bounded(msg string) string {
	if len(msg) <= fgv1alpha1.MaxReportMessageLength {
		return msg
	}
	return msg[:fgv1alpha1.MaxReportMessageLength-3] + "..."
}
