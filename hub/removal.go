package hub

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// These are the steps of removing a graph from one cluster. The caller
// (sdk.Hub) orders them and retries each until it succeeds.

// RemoveAdmission deletes g's admission policy and its binding from cl, so
// that new instances no longer get the runtime's finalizer. Absent objects,
// and a cluster that does not serve the API, count as removed.
func RemoveAdmission(ctx context.Context, cl cluster.Cluster, g *graph.Graph) error {
	return deleteAdmission(ctx, cl, g)
}

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
