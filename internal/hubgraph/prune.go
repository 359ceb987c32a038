package hubgraph

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// pruner finds one instance's children in its clusters and deletes those
// a reconcile no longer writes. It is not written to after it is made and
// needs no lock.
type pruner struct {
	rt      *Runtime
	g       *graph.Graph
	owner   *owner
	watches *watchSet
}

// children lists inst's children of gvk in one cluster (of one node when
// nodeID is set), from the cluster's metadata cache.
func (pr *pruner) children(ctx context.Context, inst *unstructured.Unstructured, name string, cl cluster.Cluster, gvk schema.GroupVersionKind, nodeID string) ([]metav1.PartialObjectMetadata, error) {
	if err := pr.watches.ensure(ctx, name, cl, gvk); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil // the kind is not served there: nothing of it is ours
		}
		return nil, err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := cl.GetCache().List(ctx, list, pr.owner.selector(inst, nodeID)); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// childrenToDelete is children for a deletion, which must not take a
// cache that has not caught up for a clean cluster: when the cache shows
// none of inst's children of gvk there but we applied one that we have not
// seen deleted (its create may still be on its way to the cache, or never
// arrive before the cluster stops answering), the cluster is asked live.
func (pr *pruner) childrenToDelete(ctx context.Context, inst *unstructured.Unstructured, name string, cl cluster.Cluster, gvk schema.GroupVersionKind, nodeID string) ([]metav1.PartialObjectMetadata, error) {
	items, err := pr.children(ctx, inst, name, cl, gvk, nodeID)
	if err != nil || len(items) > 0 || !pr.watches.memory.holds(keyOf(inst.GetNamespace(), inst.GetName()), name, gvk) {
		return items, err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := cl.GetAPIReader().List(ctx, list, pr.owner.selector(inst, nodeID)); err != nil {
		return nil, fmt.Errorf("listing %s children live: %w", gvk.Kind, err)
	}
	return list.Items, nil
}

// remove deletes one child, with its UID as a precondition.
func remove(ctx context.Context, cl cluster.Cluster, gvk schema.GroupVersionKind, o *metav1.PartialObjectMetadata) error {
	if o.DeletionTimestamp != nil {
		return nil
	}
	obj := o.DeepCopy()
	obj.SetGroupVersionKind(gvk)
	err := cl.GetClient().Delete(ctx, obj, client.Preconditions{UID: &o.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// prune deletes inst's children that this reconcile did not write, in
// every cluster the instance recorded, once every node got through
// without a failure or a wait (as the spoke runtime does).
func (pr *pruner) prune(ctx context.Context, inst *unstructured.Unstructured, p *plan, o *outcome) error {
	if o.failed != nil {
		return nil
	}
	for _, st := range o.states {
		if st == nodeWaiting {
			return nil
		}
	}
	var errs []error
	for _, name := range recordedClusters(inst) {
		cl, err := pr.clusterOf(ctx, p, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, gvk := range contract.GraphKinds(pr.g) {
			errs = append(errs, pr.pruneKind(ctx, inst, o, name, cl, gvk))
		}
	}
	return errors.Join(errs...)
}

func (pr *pruner) pruneKind(ctx context.Context, inst *unstructured.Unstructured, o *outcome, name string, cl cluster.Cluster, gvk schema.GroupVersionKind) error {
	cctx, cancel := pr.rt.callCtx(ctx)
	defer cancel()
	items, err := pr.children(cctx, inst, name, cl, gvk, "")
	if err != nil {
		return fmt.Errorf("listing %s in %s: %w", gvk.Kind, displayName(name), err)
	}
	for i := range items {
		it := &items[i]
		if o.desired[childID{cluster: name, gvk: gvk, namespace: it.Namespace, name: it.Name}] {
			continue
		}
		if err := remove(cctx, cl, gvk, it); err != nil {
			return fmt.Errorf("pruning %s %s in %s: %w", gvk.Kind, it.Name, displayName(name), err)
		}
	}
	return nil
}

// clusterOf is the named cluster: from the plan, or engaged.
func (pr *pruner) clusterOf(ctx context.Context, p *plan, name string) (cluster.Cluster, error) {
	if p != nil {
		if cl := p.clusters[name]; cl != nil {
			return cl, nil
		}
	}
	if name == "" {
		return pr.rt.hub(), nil
	}
	cl, err := pr.rt.opts.Clusters.Cluster(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("cluster %q is not engaged: %w", name, err)
	}
	return cl, nil
}
