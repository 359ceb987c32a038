package pull

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/fleetgraph/fleetgraph/internal/crds"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	kro "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// AgentClusterRole is the ClusterRole every agent is granted in its own
// cluster's namespace (a RoleBinding there): what an agent may do on the
// hub, and all it may do. config/rbac/agent.yaml is the same role.
func AgentClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   fgv1alpha1.PullAgentClusterRole,
			Labels: map[string]string{kro.LabelManagedBy: kro.ManagedByFleetgraph},
		},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{fgv1alpha1.GroupVersion.Group}, Resources: []string{"graphassignments"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{fgv1alpha1.GroupVersion.Group}, Resources: []string{"graphreports"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
			{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: []string{"create"}},
			{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, ResourceNames: []string{fgv1alpha1.PullAgentName}, Verbs: []string{"get", "update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{fgv1alpha1.PullAgentName}, Verbs: []string{"create"}},
		},
	}
}

// install puts the pull CRDs and the agents' ClusterRole on the hub.
func (s *Source) install(ctx context.Context) error {
	for _, crd := range fgv1alpha1.PullCRDs() {
		if err := crds.Install(ctx, s.client, crd, s.opts.FieldManager); err != nil {
			return fmt.Errorf("pull: %w", err)
		}
	}
	role, err := crds.ApplyIntent(AgentClusterRole())
	if err != nil {
		return fmt.Errorf("pull: %w", err)
	}
	if err := s.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(role), client.FieldOwner(s.opts.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("pull: installing the ClusterRole %s: %w", fgv1alpha1.PullAgentClusterRole, err)
	}
	return nil
}

// register makes, once per process and cluster, the cluster's finalizer,
// namespace, the agent's ServiceAccount and its RoleBinding. Existing
// objects are checked, never overwritten: one that fleetgraph did not make
// stops the registration with an error naming it.
func (s *Source) register(ctx context.Context, pc *fgv1alpha1.PullCluster) error {
	s.beats.setGrace(pc.Name, time.Duration(pc.Spec.HeartbeatGraceSeconds)*time.Second)
	s.mu.Lock()
	done := s.registered[pc.Name]
	s.mu.Unlock()
	if done {
		return nil
	}
	if !controllerutil.ContainsFinalizer(pc, fgv1alpha1.FinalizerPullCluster) {
		patch := client.MergeFrom(pc.DeepCopy())
		controllerutil.AddFinalizer(pc, fgv1alpha1.FinalizerPullCluster)
		if err := s.client.Patch(ctx, pc, patch); err != nil {
			return fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	ns := fgv1alpha1.PullNamespace(pc.Name)
	meta := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			fgv1alpha1.LabelPullCluster: pc.Name, kro.LabelManagedBy: kro.ManagedByFleetgraph,
		}}
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: meta("", ns)},
		&corev1.ServiceAccount{ObjectMeta: meta(ns, fgv1alpha1.PullAgentName)},
		&rbacv1.RoleBinding{
			ObjectMeta: meta(ns, fgv1alpha1.PullAgentName),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: fgv1alpha1.PullAgentClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: fgv1alpha1.PullAgentName}},
		},
	}
	for _, obj := range objs {
		if err := s.ensure(ctx, pc.Name, obj); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.registered[pc.Name] = true
	s.mu.Unlock()
	return nil
}

// ensure creates obj, or checks that the existing one is the cluster's.
func (s *Source) ensure(ctx context.Context, cluster string, obj client.Object) error {
	kind := fmt.Sprintf("%T", obj)
	err := s.client.Create(ctx, obj, client.FieldOwner(s.opts.FieldManager))
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s: %w", kind, client.ObjectKeyFromObject(obj), err)
	}
	existing := obj.DeepCopyObject().(client.Object)
	if err := s.client.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, client.ObjectKeyFromObject(obj), err)
	}
	if existing.GetLabels()[fgv1alpha1.LabelPullCluster] != cluster {
		return fmt.Errorf("%s %s exists and is not pull cluster %q's: it is left alone and the cluster is not registered",
			kind, client.ObjectKeyFromObject(obj), cluster)
	}
	if !existing.GetDeletionTimestamp().IsZero() {
		return fmt.Errorf("%s %s is being deleted (the cluster was removed before); retrying", kind, client.ObjectKeyFromObject(obj))
	}
	return nil
}

// writeStatus writes the PullCluster's status when it changed.
func (s *Source) writeStatus(ctx context.Context, pc *fgv1alpha1.PullCluster) error {
	ns := fgv1alpha1.PullNamespace(pc.Name)
	st := pc.Status.DeepCopy()
	st.Namespace = ns
	st.ServiceAccount = "system:serviceaccount:" + ns + ":" + fgv1alpha1.PullAgentName
	st.Graphs = int32(len(s.assignments(ctx, pc.Name)))
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: fgv1alpha1.PullClusterRegistered, Status: metav1.ConditionTrue, Reason: "Registered",
		Message:            fmt.Sprintf("namespace %s, ServiceAccount %s bound to ClusterRole %s there", ns, fgv1alpha1.PullAgentName, fgv1alpha1.PullAgentClusterRole),
		ObservedGeneration: pc.Generation,
	})
	a, age := s.beats.judge(pc.Name, time.Now())
	cond := metav1.Condition{
		Type: fgv1alpha1.PullClusterAgentAvailable, Status: metav1.ConditionUnknown, Reason: "NoHeartbeatYet",
		Message: describe(a, age, s.graceOf(pc.Name)), ObservedGeneration: pc.Generation,
	}
	switch a {
	case Available:
		cond.Status, cond.Reason = metav1.ConditionTrue, "HeartbeatRenewed"
		cond.Message = "the cluster's agent renews its heartbeat"
	case Unavailable:
		cond.Status, cond.Reason = metav1.ConditionFalse, "HeartbeatMissed"
	}
	if old := meta.FindStatusCondition(st.Conditions, cond.Type); old != nil && old.Status == cond.Status {
		cond.Message = old.Message // the age moves every second: only a change of state is news
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if equality.Semantic.DeepEqual(st, &pc.Status) {
		return nil
	}
	patch := client.MergeFrom(pc.DeepCopy())
	pc.Status = *st
	if err := s.client.Status().Patch(ctx, pc, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the PullCluster's status: %w", err)
	}
	return nil
}

// graceOf is the cluster's heartbeat grace.
func (s *Source) graceOf(cluster string) time.Duration {
	s.beats.mu.Lock()
	defer s.beats.mu.Unlock()
	if g := s.beats.get(cluster).grace; g > 0 {
		return g
	}
	return s.beats.grace
}
