package hubgraph

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// children lists inst's children of gvk in one cluster (of one node when
// nodeID is set), from the cluster's metadata cache.
func (s *server) children(ctx context.Context, inst *unstructured.Unstructured, name string, cl cluster.Cluster, gvk schema.GroupVersionKind, nodeID string) ([]metav1.PartialObjectMetadata, error) {
	if err := s.watches.ensure(ctx, name, cl, gvk); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil // the kind is not served there: nothing of it is ours
		}
		return nil, err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	sel := client.MatchingLabels{LabelHub: s.hubName, contract.LabelGraph: s.graphLabel, contract.LabelInstanceUID: string(inst.GetUID())}
	if nodeID != "" {
		sel[contract.LabelNodeID] = contract.LabelValue(nodeID)
	}
	if err := cl.GetCache().List(ctx, list, sel); err != nil {
		return nil, err
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
func (s *server) prune(ctx context.Context, inst *unstructured.Unstructured, p *plan, o *outcome) error {
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
		cl, err := s.clusterOf(ctx, p, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, gvk := range contract.GraphKinds(s.g) {
			errs = append(errs, s.pruneKind(ctx, inst, o, name, cl, gvk))
		}
	}
	return errors.Join(errs...)
}

func (s *server) pruneKind(ctx context.Context, inst *unstructured.Unstructured, o *outcome, name string, cl cluster.Cluster, gvk schema.GroupVersionKind) error {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	items, err := s.children(cctx, inst, name, cl, gvk, "")
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
func (s *server) clusterOf(ctx context.Context, p *plan, name string) (cluster.Cluster, error) {
	if p != nil {
		if cl := p.clusters[name]; cl != nil {
			return cl, nil
		}
	}
	if name == "" {
		return s.rt.hub(), nil
	}
	cl, err := s.rt.opts.Clusters.Cluster(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("cluster %q is not engaged: %w", name, err)
	}
	return cl, nil
}

// finalize deletes inst's children in reverse DAG waves across every
// cluster it recorded, then lets the instance go. A wave waits until its
// children are gone everywhere; a cluster that cannot be reached holds
// the deletion, and the instance says which.
func (s *server) finalize(ctx context.Context, inst *unstructured.Unstructured) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(inst, contract.Finalizer) {
		return reconcile.Result{}, nil
	}
	clusters := recordedClusters(inst)
	for _, wave := range s.g.DeletionWaves {
		left, unreachable := s.deleteWave(ctx, inst, clusters, wave)
		if len(unreachable) > 0 {
			msg := "deletion waits for unreachable clusters: " + strings.Join(unreachable, "; ")
			return reconcile.Result{RequeueAfter: unreachableRequeue}, s.deleting(ctx, inst, reasonClusterWaiting, msg)
		}
		if len(left) > 0 {
			msg := "deleting " + strings.Join(left, ", ")
			return reconcile.Result{RequeueAfter: waitingRequeue}, s.deleting(ctx, inst, "Deleting", msg)
		}
	}
	orig := inst.DeepCopy()
	controllerutil.RemoveFinalizer(inst, contract.Finalizer)
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	if err := s.rt.hub().GetClient().Patch(cctx, inst, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	s.instances.Delete(inst.GetUID())
	return reconcile.Result{}, nil
}

// deleteWave deletes the children of one wave's nodes in every cluster;
// it returns those still there and the clusters it could not reach.
func (s *server) deleteWave(ctx context.Context, inst *unstructured.Unstructured, clusters []string, wave []*graph.Node) (left, unreachable []string) {
	for _, name := range clusters {
		cl, err := s.clusterOf(ctx, nil, name)
		if err != nil {
			unreachable = append(unreachable, fmt.Sprintf("%s: %v", displayName(name), err))
			continue
		}
		for _, n := range wave {
			if n.External {
				continue
			}
			l, err := s.deleteNode(ctx, inst, name, cl, n)
			if err != nil {
				unreachable = append(unreachable, fmt.Sprintf("%s: %v", displayName(name), err))
				break
			}
			left = append(left, l...)
		}
	}
	return left, unreachable
}

func (s *server) deleteNode(ctx context.Context, inst *unstructured.Unstructured, name string, cl cluster.Cluster, n *graph.Node) ([]string, error) {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	items, err := s.children(cctx, inst, name, cl, n.GVK, n.ID)
	if err != nil {
		return nil, err
	}
	var left []string
	for i := range items {
		if err := remove(cctx, cl, n.GVK, &items[i]); err != nil {
			return nil, err
		}
		left = append(left, fmt.Sprintf("%s %s in %s", n.GVK.Kind, items[i].Name, displayName(name)))
	}
	return left, nil
}

// deleting shows that the instance is being deleted and why it waits.
func (s *server) deleting(ctx context.Context, inst *unstructured.Unstructured, reason, msg string) error {
	conds := []condition{{Type: contract.ConditionReady, Status: "False", Reason: reason, Message: msg}}
	return s.patchStatus(ctx, inst, contract.StateDeleting, conds, nil)
}
