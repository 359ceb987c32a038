package hubgraph

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/cleanup"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// DeleteCRD deletes a hub graph's CRD from the hub once no instance of it
// is left there: what sdk.Options.DeleteCRDsOnUnregister does on the
// spokes for the graphs served there. Call it once the graph is stopped.
// The hub cache's informer of the instance kind goes first, so that
// nothing keeps watching a kind about to disappear. A CRD that is not
// labelled as fleetgraph's, or that still has an instance (a released
// one, with OrphanInstances), stays; so does one that cannot be read,
// which the caller retries.
func (r *Runtime) DeleteCRD(ctx context.Context, g *graph.Graph) error {
	inst := &unstructured.Unstructured{}
	inst.SetGroupVersionKind(g.Instance.GVK)
	if err := r.hub().GetCache().RemoveInformer(ctx, inst); err != nil {
		return fmt.Errorf("stopping the hub's watch of %s: %w", g.Instance.GVK.Kind, err)
	}
	hubCluster := []hub.Cluster{{Cluster: r.hub()}}
	noPolicy := func(context.Context, hub.Cluster) error { return nil }
	if err := cleanup.DeleteUnusedCRDs(ctx, hubCluster, g, noPolicy); err != nil {
		return fmt.Errorf("deleting the CRD of hub graph %s from the hub: %w", g.Name, err)
	}
	return nil
}
