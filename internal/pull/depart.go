package pull

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// departPoll is how often a departure looks at the agent's reports.
const departPoll = time.Second

// depart cleans up after a deleted PullCluster, as the hub cleans up
// after a pushed cluster that leaves the fleet: every assignment is
// turned to Release (the agent takes fleetgraph's finalizer off every
// instance; instances, children and CRDs stay); once the agent reports
// them released, or cannot be reached (its finalizers then stay), or
// DepartureTimeout has passed, the cluster's objects and namespace on
// the hub are deleted, which revokes the agent's identity, and the
// PullCluster's finalizer goes.
func (s *Source) depart(ctx context.Context, pc *fgv1alpha1.PullCluster) error {
	if !controllerutil.ContainsFinalizer(pc, fgv1alpha1.FinalizerPullCluster) {
		return nil
	}
	log := s.opts.Logger.WithValues("cluster", pc.Name)
	s.mu.Lock()
	started, ok := s.departing[pc.Name]
	if !ok {
		started = time.Now()
		s.departing[pc.Name] = started
		delete(s.registered, pc.Name)
	}
	s.mu.Unlock()
	have := map[string]*fgv1alpha1.GraphAssignment{}
	items := s.assignments(ctx, pc.Name)
	want := make(map[string]fgv1alpha1.GraphAssignmentSpec, len(items))
	for i := range items {
		a := &items[i]
		have[a.Name] = a
		spec := a.Spec
		spec.Removal, spec.DeleteCRD = fgv1alpha1.RemovalRelease, false
		want[a.Name] = spec
	}
	if err := s.write(ctx, pc.Name, have, want); err != nil {
		return err
	}
	held, pending := s.released(ctx, pc.Name, items)
	availability, _ := s.beats.judge(pc.Name, time.Now())
	switch {
	case pending == 0:
		log.Info("pull cluster removed: its instances are released (CRDs, instances and children stay)", "graphs", len(items))
	case availability == Unavailable:
		log.Info("pull cluster removed while its agent cannot be reached: its instances keep fleetgraph's finalizer",
			"graphs waiting", pending, "instances held", held)
	case time.Since(started) > s.opts.DepartureTimeout:
		log.Info("gave up waiting for a removed pull cluster's agent to release its instances: they keep fleetgraph's finalizer",
			"graphs waiting", pending, "instances held", held, "after", s.opts.DepartureTimeout.String())
	default:
		s.queue.AddAfter(pc.Name, departPoll)
		return nil
	}
	if err := s.deleteObjects(ctx, pc.Name); err != nil {
		return err
	}
	patch := client.MergeFrom(pc.DeepCopy())
	controllerutil.RemoveFinalizer(pc, fgv1alpha1.FinalizerPullCluster)
	if err := s.client.Patch(ctx, pc, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the PullCluster's finalizer: %w", err)
	}
	return nil
}

// released counts, over the cluster's assignments, the instances the
// agent reports still held and the graphs whose release it has not
// reported done yet (on the latest assignment).
func (s *Source) released(ctx context.Context, cluster string, items []fgv1alpha1.GraphAssignment) (held, pending int) {
	reports := s.reports(ctx, cluster)
	for i := range items {
		a := &items[i]
		r := reports[a.Name]
		if a.Spec.Removal != fgv1alpha1.RemovalRelease || r == nil || r.Status.ObservedGeneration != a.Generation || r.Status.Removal == nil {
			pending++
			continue
		}
		if !r.Status.Removal.Done {
			held += int(r.Status.Removal.Held)
			pending++
		}
	}
	return held, pending
}

// deleteObjects deletes what the hub made for the cluster, its
// ServiceAccount (every token of it stops working) before its namespace.
// Namespace deletion removes the rest on a real cluster; the objects are
// deleted one by one too, so that nothing waits for a namespace
// controller.
func (s *Source) deleteObjects(ctx context.Context, cluster string) error {
	ns := fgv1alpha1.PullNamespace(cluster)
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fgv1alpha1.PullAgentName}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fgv1alpha1.PullAgentName}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fgv1alpha1.PullAgentName}},
	}
	var errs []error
	for _, obj := range objs {
		if err := s.client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %T %s: %w", obj, client.ObjectKeyFromObject(obj), err))
		}
	}
	for _, kind := range []client.Object{&fgv1alpha1.GraphAssignment{}, &fgv1alpha1.GraphReport{}} {
		if err := s.client.DeleteAllOf(ctx, kind, client.InNamespace(ns)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the cluster's %T objects: %w", kind, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := s.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %s: %w", ns, err)
	}
	return nil
}
