package hubgraph

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// finalizer deletes a deleted instance's children in reverse DAG waves
// across every cluster it recorded, then lets the instance go. Its one
// piece of shared state is the server's instances map (a sync.Map, safe
// for concurrent use), from which it forgets each instance it lets go.
type finalizer struct {
	rt        *Runtime
	g         *graph.Graph
	prune     *pruner
	report    *reporter
	instances *sync.Map
}

// finalize deletes inst's children in reverse DAG waves across every
// cluster it recorded, then lets the instance go. A wave waits until its
// children are gone everywhere; a cluster that cannot be reached holds
// the deletion, and the instance says which, until Options.AbandonAfter
// (when set) has passed since it was first found unreachable: the
// deletion then goes on without it (abandon.go).
func (f *finalizer) finalize(ctx context.Context, inst *unstructured.Unstructured) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(inst, contract.Finalizer) {
		return reconcile.Result{}, nil
	}
	since := unreachableSince(inst)
	abandoned := f.graceOver(since, time.Now())
	var clusters []string
	for _, name := range recordedClusters(inst) {
		if !slices.Contains(abandoned, name) {
			clusters = append(clusters, name)
		}
	}
	for _, wave := range f.g.DeletionWaves {
		left, downs := f.deleteWave(ctx, inst, clusters, wave)
		if len(downs) > 0 {
			after, err := f.waitFor(ctx, inst, since, abandoned, downs)
			return reconcile.Result{RequeueAfter: after}, err
		}
		if len(left) > 0 {
			if err := f.recordSince(ctx, inst, since, onlyAbandoned(since, abandoned)); err != nil {
				return reconcile.Result{}, err // every cluster was reached: none waits any more
			}
			msg := "deleting " + strings.Join(left, ", ")
			return reconcile.Result{RequeueAfter: waitingRequeue}, f.deleting(ctx, inst, "Deleting", msg)
		}
	}
	orig := inst.DeepCopy()
	controllerutil.RemoveFinalizer(inst, contract.Finalizer)
	cctx, cancel := f.rt.callCtx(ctx)
	defer cancel()
	if err := f.rt.hub().GetClient().Patch(cctx, inst, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if len(abandoned) > 0 {
		// Once the finalizer is off, so that a write that failed (and is
		// retried) does not report it twice.
		f.reportAbandoned(ctx, orig, abandoned, since)
	}
	f.instances.Delete(inst.GetUID())
	return reconcile.Result{}, nil
}

// deleteWave deletes the children of one wave's nodes in every cluster;
// it returns those still there and the clusters it could not reach.
func (f *finalizer) deleteWave(ctx context.Context, inst *unstructured.Unstructured, clusters []string, wave []*graph.Node) (left []string, downs []down) {
	for _, name := range clusters {
		cl, err := f.prune.clusterOf(ctx, nil, name)
		if err != nil {
			downs = append(downs, down{cluster: name, err: err})
			continue
		}
		for _, n := range wave {
			if n.External {
				continue
			}
			l, err := f.deleteNode(ctx, inst, name, cl, n)
			if err != nil {
				downs = append(downs, down{cluster: name, err: err})
				break
			}
			left = append(left, l...)
		}
	}
	return left, downs
}

func (f *finalizer) deleteNode(ctx context.Context, inst *unstructured.Unstructured, name string, cl cluster.Cluster, n *graph.Node) ([]string, error) {
	cctx, cancel := f.rt.callCtx(ctx)
	defer cancel()
	items, err := f.prune.childrenToDelete(cctx, inst, name, cl, n.GVK, n.ID)
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
func (f *finalizer) deleting(ctx context.Context, inst *unstructured.Unstructured, reason, msg string) error {
	conds := []condition{{Type: contract.ConditionReady, Status: "False", Reason: reason, Message: msg}}
	return f.report.patchStatus(ctx, inst, contract.StateDeleting, conds, nil)
}
