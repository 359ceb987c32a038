package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// TeamLabel marks a namespace that belongs to a team.
const TeamLabel = "example.com/team"

// TeamDefaults stands for the platform's own controller: it gives every team
// namespace a "team-defaults" ConfigMap. It knows nothing about fleetgraph.
type TeamDefaults struct {
	Client client.Client
}

// SetupWithManager registers the controller with a plain controller-runtime
// manager.
func (r *TeamDefaults) SetupWithManager(mgr ctrl.Manager) error {
	hasTeam := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[TeamLabel] != "" })
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Namespace{}, builder.WithPredicates(hasTeam)).
		Complete(r)
}

// Reconcile creates the namespace's defaults ConfigMap if it is missing.
func (r *TeamDefaults) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "team-defaults"},
		Data:       map[string]string{"team": ns.Labels[TeamLabel]},
	}
	return ctrl.Result{}, client.IgnoreAlreadyExists(r.Client.Create(ctx, cm))
}
