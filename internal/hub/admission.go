package hub

import (
	"context"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// applyAdmission installs g's admission policy (contract.AdmissionPolicy) on
// cl where the API server serves MutatingAdmissionPolicy. The policy only
// saves the runtime a write per new instance, so a cluster without the API,
// or one that refuses the policy, is logged and served all the same.
func (f *FanOut) applyAdmission(ctx context.Context, clusterName string, cl cluster.Cluster, g *graph.Graph) {
	served, err := f.servesAdmissionPolicies(ctx, cl)
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
	return f.applyObjects(ctx, cl, contract.AdmissionPolicy(g))
}

// servesAdmissionPolicies asks cl's discovery whether it serves
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy.
func (f *FanOut) servesAdmissionPolicies(ctx context.Context, cl cluster.Cluster) (bool, error) {
	ctx, cancel := f.request(ctx)
	defer cancel()
	served, err := servedKinds(ctx, cl, admissionv1.SchemeGroupVersion)
	return served["MutatingAdmissionPolicy"], err
}

// deleteAdmission removes g's admission policy and binding from cl, and
// the probe of admission_activate.go if one was left.
func deleteAdmission(ctx context.Context, cl cluster.Cluster, g *graph.Graph) error {
	return deleteObjects(ctx, cl, append(contract.AdmissionPolicy(g), contract.AdmissionProbe(g)...))
}
