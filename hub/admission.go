package hub

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// applyAdmission installs g's admission policy (spoke.AdmissionPolicy) on
// cl where the API server serves MutatingAdmissionPolicy. The policy only
// saves the runtime a write per new instance, so a cluster without the API,
// or one that refuses the policy, is logged and served all the same.
func (f *FanOut) applyAdmission(ctx context.Context, clusterName string, cl cluster.Cluster, g *graph.Graph) {
	served, err := servesAdmissionPolicies(cl)
	if err == nil && served {
		err = f.applyPolicy(ctx, cl, g)
	}
	switch {
	case err != nil:
		f.opts.Logger.Info("admission policy not installed; the runtime stamps new instances itself",
			"cluster", clusterName, "graph", g.Name, "reason", err.Error())
	case !served:
		f.opts.Logger.V(1).Info("cluster does not serve MutatingAdmissionPolicy; the runtime stamps new instances itself",
			"cluster", clusterName, "graph", g.Name)
	}
}

func (f *FanOut) applyPolicy(ctx context.Context, cl cluster.Cluster, g *graph.Graph) error {
	for _, obj := range spoke.AdmissionPolicy(g) {
		u, err := applyIntent(obj)
		if err != nil {
			return err
		}
		err = cl.GetClient().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(f.opts.FieldManager), client.ForceOwnership)
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// servesAdmissionPolicies asks cl's discovery whether it serves
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy.
func servesAdmissionPolicies(cl cluster.Cluster) (bool, error) {
	served, err := servedKinds(cl, admissionv1.SchemeGroupVersion)
	return served["MutatingAdmissionPolicy"], err
}

// deleteAdmission removes g's admission policy and binding from cl.
func deleteAdmission(ctx context.Context, cl cluster.Cluster, g *graph.Graph) error {
	for _, obj := range spoke.AdmissionPolicy(g) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind(obj.GetObjectKind().GroupVersionKind().Kind))
		u.SetName(obj.GetName())
		err := cl.GetClient().Delete(ctx, u)
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			return fmt.Errorf("deleting %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}
