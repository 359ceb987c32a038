package agent

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	kro "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// gate is the spoke runtime's gate: a version serves the cluster once its
// CRD is established there, put there by the public fan-out with the
// rules it applies to a pushed cluster (a CRD fleetgraph does not own is
// a conflict, a breaking change is refused unless the RGD opts in, a
// missing kind makes the cluster incompatible). A version being removed
// is served where its CRD already is.
func (a *Agent) gate(ctx context.Context, _ multicluster.ClusterName, v spoke.Version) error {
	if v.Removal != "" {
		return nil
	}
	return a.fanOut.Ensure(ctx, "", a.crdGraph(v))
}

// crdGraph is v as the fan-out serves it.
func (a *Agent) crdGraph(v spoke.Version) hub.Graph {
	allow := false
	a.mu.Lock()
	if s := a.graphs[v.Graph.Name]; s != nil && s.version.Graph == v.Graph {
		allow = s.spec.Snapshot.AllowBreakingChanges
	}
	a.mu.Unlock()
	return hub.Graph{
		Name: v.Graph.Name, Generation: v.Graph.Generation, Revision: v.Revision,
		CRD: v.Graph.CRD, Kinds: kindsOf(v.Graph), AllowBreaking: allow,
	}
}

// kindsOf are the kinds g's resources use, sorted, without duplicates.
func kindsOf(g *graph.Graph) []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		out = append(out, n.GVK)
	}
	slices.SortFunc(out, func(x, y schema.GroupVersionKind) int {
		switch {
		case x.String() < y.String():
			return -1
		case x.String() > y.String():
			return 1
		}
		return 0
	})
	return slices.Compact(out)
}

// removal does the agent's part of a removal assignment, and says how far
// it is: the runtime serves the removal (Finalize or Release); once no
// instance holds the finalizer, DeleteCRD deletes the CRD if no instance
// is left and fleetgraph owns it.
func (a *Agent) removal(ctx context.Context, s servedView) *fgv1alpha1.ReportedRemoval {
	g := s.version.Graph
	if g == nil {
		return &fgv1alpha1.ReportedRemoval{Message: fmt.Sprintf("the removal's revision does not compile here: %v", s.compileErr)}
	}
	if s.crdDeleted {
		return &fgv1alpha1.ReportedRemoval{Done: true, CRDDeleted: true, Message: s.crdMessage}
	}
	held, total, err := a.instances(ctx, g)
	if err != nil {
		return &fgv1alpha1.ReportedRemoval{Message: err.Error()}
	}
	r := &fgv1alpha1.ReportedRemoval{Held: int32(held)}
	switch {
	case held > 0 && s.spec.Removal == fgv1alpha1.RemovalFinalize:
		r.Message = fmt.Sprintf("%d instances hold the finalizer: each goes once deleted", held)
	case held > 0:
		r.Message = fmt.Sprintf("%d instances hold the finalizer: releasing them", held)
	case !s.spec.DeleteCRD:
		r.Done = true
	case total > 0:
		r.Done, r.Message = true, fmt.Sprintf("CRD %s kept: %d instances are left", g.CRD.Name, total)
	default:
		deleted, msg, err := a.deleteCRD(ctx, g)
		if err != nil {
			r.Message = err.Error()
			break
		}
		r.Done, r.CRDDeleted, r.Message = true, deleted, msg
		a.mu.Lock()
		if cur := a.graphs[s.name]; cur != nil {
			cur.crdDeleted, cur.crdMessage, cur.stopped = deleted, msg, true
		}
		a.mu.Unlock()
	}
	return r
}

// instances counts g's instances on the cluster, live, and those holding
// the runtime's finalizer. A kind no longer served has none.
func (a *Agent) instances(ctx context.Context, g *graph.Graph) (held, total int, err error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(g.Instance.GVK.GroupVersion().WithKind(g.Instance.GVK.Kind + "List"))
	if err := a.local.GetAPIReader().List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return 0, 0, nil
		}
		return 0, 0, fmt.Errorf("listing %s instances: %w", g.Instance.GVK.Kind, err)
	}
	for i := range list.Items {
		if slices.Contains(list.Items[i].Finalizers, spoke.Finalizer) {
			held++
		}
	}
	return held, len(list.Items), nil
}

// deleteCRD stops serving g and deletes its CRD if fleetgraph owns it. It
// reports whether the CRD is gone.
func (a *Agent) deleteCRD(ctx context.Context, g *graph.Graph) (bool, string, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := a.local.GetAPIReader().Get(ctx, client.ObjectKey{Name: g.CRD.Name}, crd)
	switch {
	case apierrors.IsNotFound(err):
		a.rt.Stop(g.Name)
		a.fanOut.Stop(g.Name)
		return true, "", nil
	case err != nil:
		return false, "", fmt.Errorf("reading CRD %s: %w", g.CRD.Name, err)
	case crd.Labels[kro.LabelManagedBy] != kro.ManagedByFleetgraph:
		return false, fmt.Sprintf("CRD %s kept: fleetgraph does not own it", g.CRD.Name), nil
	}
	a.rt.Stop(g.Name) // its instance watch would hold the CRD's informer
	// The fan-out keeps the CRDs it installed (it puts back one deleted by
	// hand): it must stop keeping this one before it is deleted.
	a.fanOut.Stop(g.Name)
	uid := crd.UID
	if err := a.local.GetClient().Delete(ctx, crd, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return false, "", fmt.Errorf("deleting CRD %s: %w", g.CRD.Name, err)
	}
	a.opts.Logger.Info("graph removed: its CRD deleted", "graph", g.Name, "crd", g.CRD.Name)
	return true, "", nil
}
