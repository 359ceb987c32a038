package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// These are the steps of removing a graph from one cluster. The caller
// (sdk.Hub) orders them and retries each until it succeeds.

// HeldInstances returns how many instances of g on cl still carry
// finalizer. A cluster that does not serve g's kind holds none.
func HeldInstances(ctx context.Context, cl cluster.Cluster, g *graph.Graph, finalizer string) (int, error) {
	items, err := listInstances(ctx, cl, g)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range items {
		if slices.Contains(items[i].Finalizers, finalizer) {
			n++
		}
	}
	return n, nil
}

// listInstances reads the metadata of every instance of g on cl, live.
func listInstances(ctx context.Context, cl cluster.Cluster, g *graph.Graph) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(g.Instance.GVK.GroupVersion().WithKind(g.Instance.GVK.Kind + "List"))
	if err := cl.GetAPIReader().List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s instances: %w", g.Instance.GVK.Kind, err)
	}
	for i := range list.Items {
		list.Items[i].SetGroupVersionKind(g.Instance.GVK)
	}
	return list.Items, nil
}

// ReleaseInstances takes finalizer off every instance of g on cl that
// carries it, leaving the instances and their children in place: what is
// left when nothing will finalize them any more (their cluster left the
// fleet). Their children are first marked contract.AnnotationReleased, so
// that they are never collected as orphans. Each write is conditional on
// the instance's resourceVersion; a conflict is returned, and the caller
// tries again. It returns how many instances it released.
func ReleaseInstances(ctx context.Context, cl cluster.Cluster, g *graph.Graph, finalizer string) (int, error) {
	items, err := listInstances(ctx, cl, g)
	if err != nil {
		return 0, err
	}
	held := map[types.UID]bool{}
	for i := range items {
		if slices.Contains(items[i].Finalizers, finalizer) {
			held[items[i].UID] = true
		}
	}
	// Children first: an instance released before its children are
	// marked could lose them to the orphan collector (release_children.go).
	if err := markChildrenReleased(ctx, cl, g, held); err != nil {
		return 0, err
	}
	released := 0
	var errs []error
	for i := range items {
		if !slices.Contains(items[i].Finalizers, finalizer) {
			continue
		}
		if err := dropFinalizer(ctx, cl, &items[i], finalizer); err != nil {
			errs = append(errs, err)
			continue
		}
		released++
	}
	return released, errors.Join(errs...)
}

func dropFinalizer(ctx context.Context, cl cluster.Cluster, obj *metav1.PartialObjectMetadata, finalizer string) error {
	rest := slices.DeleteFunc(slices.Clone(obj.Finalizers), func(f string) bool { return f == finalizer })
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": rest, "resourceVersion": obj.ResourceVersion,
	}})
	if err != nil {
		return err
	}
	err = cl.GetClient().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing %s %s/%s: %w", obj.Kind, obj.Namespace, obj.Name, err)
	}
	return nil
}
