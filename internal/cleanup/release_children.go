package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// markChildrenReleased marks the children of the given instances of g on
// cl with contract.AnnotationReleased, before the instances are released:
// their children stay on purpose, and the spoke runtime must never collect
// them as orphans once the instances are deleted (should the cluster be
// served again). It lists each of g's child kinds once, selecting the
// graph's label; each write names the child's UID.
func markChildrenReleased(ctx context.Context, cl cluster.Cluster, g *graph.Graph, instances map[types.UID]bool) error {
	if len(instances) == 0 {
		return nil
	}
	var errs []error
	for _, k := range contract.GraphKinds(g) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
		err := cl.GetAPIReader().List(ctx, list, client.MatchingLabels{contract.LabelGraph: contract.LabelValue(g.Name)})
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("listing %s children: %w", k.Kind, err))
			continue
		}
		for i := range list.Items {
			child := &list.Items[i]
			if !instances[types.UID(child.Labels[contract.LabelInstanceUID])] ||
				child.Annotations[contract.AnnotationReleased] == "true" {
				continue
			}
			child.SetGroupVersionKind(k)
			errs = append(errs, markReleased(ctx, cl, child))
		}
	}
	return errors.Join(errs...)
}

func markReleased(ctx context.Context, cl cluster.Cluster, child *metav1.PartialObjectMetadata) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": child.UID, "annotations": map[string]any{contract.AnnotationReleased: "true"}}})
	if err != nil {
		return err
	}
	err = cl.GetClient().Patch(ctx, child, client.RawPatch(types.MergePatchType, patch))
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("marking %s %s/%s released: %w", child.Kind, child.Namespace, child.Name, err)
}
