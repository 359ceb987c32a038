package cleanup

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/crds"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// DeleteUnusedCRDs deletes g's CRD, and its admission policy (with
// removeAdmission), from every cluster that holds no instance of it and
// where fleetgraph owns the CRD, all clusters in parallel. A cluster that
// still has instances keeps both: deleting the CRD would delete them.
func DeleteUnusedCRDs(ctx context.Context, clusters []hub.Cluster, g *graph.Graph, removeAdmission func(context.Context, hub.Cluster) error) error {
	errs := make([]error, len(clusters))
	var wg sync.WaitGroup
	for i, c := range clusters {
		wg.Go(func() {
			if err := deleteIfUnused(ctx, c, g, removeAdmission); err != nil {
				errs[i] = fmt.Errorf("cluster %q: %w", c.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func deleteIfUnused(ctx context.Context, c hub.Cluster, g *graph.Graph, removeAdmission func(context.Context, hub.Cluster) error) error {
	cl := c.Cluster
	// Each request is bounded: a spoke that hangs fails this attempt, and
	// the caller retries.
	ctx, cancel := context.WithTimeout(ctx, 3*hub.DefaultRequestTimeout)
	defer cancel()
	crd, err := crds.Get(ctx, cl.GetAPIReader(), g.CRD.Name)
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if crd.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByFleetgraph {
		return nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(g.Instance.GVK.GroupVersion().WithKind(g.Instance.GVK.Kind + "List"))
	if err := cl.GetAPIReader().List(ctx, list, client.Limit(1)); err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	if len(list.Items) > 0 {
		return nil
	}
	if err := removeAdmission(ctx, c); err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	u.SetName(crd.Name)
	return client.IgnoreNotFound(cl.GetClient().Delete(ctx, u, client.Preconditions{UID: &crd.UID}))
}
