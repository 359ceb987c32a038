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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// Requeue delays.
const (
	// waitingRequeue is how soon an instance that waits (a child not
	// ready, a refusal that an engaged cluster may lift, a deletion) is
	// looked at again without an event.
	waitingRequeue = 2 * time.Second
	// conflictRequeue is how soon an instance whose finalizer write met a
	// conflict is tried again: the echo of our own writes requeues
	// nothing (instances.go), so the retry is asked for here.
	conflictRequeue = 200 * time.Millisecond
)

// Reconcile reconciles one hub instance: its targets first, then its
// children in DAG order across clusters, then its status.
func (s *server) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	e := s.engine.Load()
	inst, err := s.instance(ctx, req.NamespacedName)
	if apierrors.IsNotFound(err) {
		e.ForgetInstance(req.NamespacedName, "") // gone: nothing of it is applied again
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if mode := s.removal.Load(); mode != nil {
		return s.removingReconcile(ctx, inst, mode) // removal.go
	}
	if inst.GetDeletionTimestamp() != nil {
		return s.finalize(ctx, inst)
	}
	if instance.Suspended(inst) {
		return reconcile.Result{}, nil
	}
	p, err := s.targets.resolve(ctx, inst)
	if err != nil {
		s.releaseRefused(ctx, inst) // stamp.go
		return s.refused(inst, err) // status.go
	}
	inst, err = s.record(inst, p)
	if errors.Is(err, instance.ErrConflict) {
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	full := e.ResyncDue(req.NamespacedName)
	o := e.Evaluate(inst, p.vals, p, full)
	pruneErr := e.Prune(inst, o, s.recorded(ctx, inst, p))
	st, err := e.WriteStatus(inst, o, pruneErr, targetsAllowed)
	if err != nil {
		return reconcile.Result{}, err
	}
	if o.Limited() {
		return reconcile.Result{RequeueAfter: s.limitedRequeue(req, time.Since(start))}, nil // fair.go
	}
	if st.State != contract.StateActive {
		return reconcile.Result{RequeueAfter: waitingRequeue}, nil
	}
	return reconcile.Result{RequeueAfter: e.ScheduleResync(req.NamespacedName, full)}, nil
}

// instance is the instance from the hub's cache, or our own newer write
// of it, with its schema's defaults.
func (s *server) instance(ctx context.Context, key types.NamespacedName) (*unstructured.Unstructured, error) {
	e := s.engine.Load()
	inst := &unstructured.Unstructured{}
	inst.SetGroupVersionKind(s.g.Instance.GVK)
	if err := s.rt.hub().GetCache().Get(ctx, key, inst); err != nil {
		return nil, err
	}
	return e.Defaulted(e.Writes().Fresher(inst)), nil
}

// finalize has the engine delete the instance's children in reverse DAG
// waves across every cluster it recorded.
func (s *server) finalize(ctx context.Context, inst *unstructured.Unstructured) (reconcile.Result, error) {
	after, err := s.engine.Load().Finalize(inst, s.recorded(ctx, inst, nil))
	return reconcile.Result{RequeueAfter: after}, err
}

// recordedClusters is the instance's AnnotationClusters.
func recordedClusters(inst *unstructured.Unstructured) []string {
	var out []string
	if v := inst.GetAnnotations()[AnnotationClusters]; v != "" {
		_ = json.Unmarshal([]byte(v), &out)
	}
	return out
}

// recorded is every cluster the instance recorded, as the plan (when
// there is one) or the fleet reaches it now.
func (s *server) recorded(ctx context.Context, inst *unstructured.Unstructured, p *plan) []instance.Reach {
	names := recordedClusters(inst)
	out := make([]instance.Reach, 0, len(names))
	for _, name := range names {
		if p != nil && p.clusters[name] != nil {
			out = append(out, instance.Reach{Name: name, Cluster: p.clusters[name]})
			continue
		}
		out = append(out, s.rt.reach(ctx, name))
	}
	return out
}

// record puts the finalizer and every cluster of p on the instance, in
// one write (the engine's bookkeeping, with the graph's child kinds),
// before anything is written to those clusters. An instance the hub's
// admission policy stamped (stamp.go) has them already, unless a computed
// or Secret target names another cluster: nothing is written then.
// Otherwise the reconcile goes on with the API server's answer: nothing
// waits for the write's event, which requeues nothing (instances.go). A
// write that met a conflict (somebody else wrote the instance since our
// copy) returns instance.ErrConflict, for the caller to requeue.
func (s *server) record(inst *unstructured.Unstructured, p *plan) (*unstructured.Unstructured, error) {
	want := recordedClusters(inst)
	for name := range p.clusters {
		if !slices.Contains(want, name) {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	b, _ := json.Marshal(want)
	annotations := map[string]string{AnnotationClusters: string(b)}
	if slices.Equal(want, recordedClusters(inst)) && inst.GetAnnotations()[AnnotationClusters] != "" {
		annotations = nil // the same list, maybe spelled otherwise
	}
	return s.engine.Load().Bookkeep(inst, annotations)
}

// toUnstructured converts a typed object.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func keyOf(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}
