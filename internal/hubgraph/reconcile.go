package hubgraph

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// Requeue delays.
const (
	// waitingRequeue is how soon an instance that waits (a child not
	// ready, a refusal that an engaged cluster may lift) is looked at
	// again without an event.
	waitingRequeue = 2 * time.Second
	// unreachableRequeue is how soon a deletion held by a cluster that
	// cannot be reached is tried again.
	unreachableRequeue = 5 * time.Second
	// conflictRequeue is how soon an instance whose finalizer write met a
	// conflict is tried again: the echo of our own writes requeues
	// nothing (instance_writes.go), so the retry is asked for here.
	conflictRequeue = 200 * time.Millisecond
)

// Reconcile reconciles one hub instance: its targets first, then its
// children in DAG order across clusters, then its status.
func (s *server) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	inst := &unstructured.Unstructured{}
	inst.SetGroupVersionKind(s.g.Instance.GVK)
	if err := s.rt.hub().GetCache().Get(ctx, req.NamespacedName, inst); err != nil {
		if apierrors.IsNotFound(err) {
			s.watches.memory.forgetOwner(req.NamespacedName) // gone: nothing of it is applied again
			s.externals.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	inst = s.writes.fresher(inst)
	if controllerutil.ContainsFinalizer(inst, contract.Finalizer) {
		// Only an instance that may have children is looked up by its
		// children's events; finalize forgets it.
		s.instances.Store(inst.GetUID(), req.NamespacedName)
	}
	if mode := s.removal.Load(); mode != nil {
		return s.removingReconcile(ctx, inst, mode) // removal.go
	}
	if inst.GetDeletionTimestamp() != nil {
		s.externals.forget(req.NamespacedName) // nothing it reads matters any more
		return s.finalizer.finalize(ctx, inst)
	}
	if suspended(inst) {
		return reconcile.Result{}, nil
	}
	p, err := s.targets.resolve(ctx, inst)
	if err != nil {
		s.releaseRefused(ctx, inst) // stamp.go
		return s.status.refused(ctx, inst, err)
	}
	if retry, err := s.record(ctx, inst, p); err != nil {
		return reconcile.Result{}, err
	} else if retry {
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	}
	o := s.eval.evaluate(ctx, inst, p)
	s.externals.set(req.NamespacedName, o.refs)
	pruneErr := s.pruner.prune(ctx, inst, p, o)
	state, err := s.status.writeStatus(ctx, inst, o, pruneErr)
	if err != nil {
		return reconcile.Result{}, err
	}
	if o.limited() {
		return reconcile.Result{RequeueAfter: s.limitedRequeue(req, time.Since(start))}, nil // fair.go
	}
	if state != contract.StateActive {
		return reconcile.Result{RequeueAfter: waitingRequeue}, nil
	}
	return reconcile.Result{RequeueAfter: s.rt.opts.Instances.Resync}, nil
}

func suspended(inst *unstructured.Unstructured) bool {
	a := inst.GetAnnotations()
	return a[contract.AnnotationReconcile] == contract.ReconcileSuspended || a[contract.AnnotationKroReconcile] == contract.ReconcileSuspended
}

// recordedClusters is the instance's AnnotationClusters.
func recordedClusters(inst *unstructured.Unstructured) []string {
	var out []string
	if v := inst.GetAnnotations()[AnnotationClusters]; v != "" {
		_ = json.Unmarshal([]byte(v), &out)
	}
	return out
}

// record puts the finalizer and every cluster of p on the instance, in
// one write, before anything is written to those clusters. An instance
// the hub's admission policy stamped (stamp.go) has both already, unless
// a computed or Secret target names another cluster: nothing is written
// then. Otherwise inst becomes
// the API server's answer and the reconcile goes on with it: nothing waits
// for the write's event, which requeues nothing (instance_writes.go). It
// returns retry when the write met a conflict (somebody else wrote the
// instance since our copy), for the caller to requeue.
func (s *server) record(ctx context.Context, inst *unstructured.Unstructured, p *plan) (retry bool, err error) {
	have := recordedClusters(inst)
	want := slices.Clone(have)
	for name := range p.clusters {
		if !slices.Contains(want, name) {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	if controllerutil.ContainsFinalizer(inst, contract.Finalizer) && len(want) == len(have) {
		return false, nil
	}
	orig := inst.DeepCopy()
	controllerutil.AddFinalizer(inst, contract.Finalizer)
	b, _ := json.Marshal(want)
	a := inst.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationClusters] = string(b)
	inst.SetAnnotations(a)
	cctx, cancel := s.rt.callCtx(ctx)
	defer cancel()
	err = s.writes.writing(keyOf(inst.GetNamespace(), inst.GetName()), inst, func() error {
		return s.rt.hub().GetClient().Patch(cctx, inst, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
	switch {
	case apierrors.IsConflict(err):
		return true, nil
	case err != nil:
		return false, err
	}
	s.instances.Store(inst.GetUID(), keyOf(inst.GetNamespace(), inst.GetName()))
	return false, nil
}

// toUnstructured converts a typed object.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// errorsAs is errors.As for a pointer target.
func errorsAs[T error](err error) (T, bool) {
	var t T
	ok := errors.As(err, &t)
	return t, ok
}
