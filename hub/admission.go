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

	"github.com/fleetgraph/fleetgraph/internal/crds"
)

// admissions installs, binds and removes the graphs' admission policies
// (Graph.Admission): binding only once it is safe
// (admission_activate.go), and never again after a removal began
// (admission_fence.go).
type admissions struct {
	opts  *Options
	fence fence
	// refresh applies the policy and binding again when the binding is
	// found bound (Admissions); a FanOut leaves a bound policy as it is.
	refresh bool
}

// bound reports whether g's admission policy binding exists on cl.
func (a *admissions) bound(ctx context.Context, cl cluster.Cluster, g Graph) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
	defer cancel()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding"))
	err := cl.GetAPIReader().Get(ctx, client.ObjectKey{Name: g.Admission.Binding.GetName()}, u)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// installed reports whether g's admission policy and its binding both
// exist on cl.
func (a *admissions) installed(ctx context.Context, cl cluster.Cluster, g Graph) (bool, error) {
	bound, err := a.bound(ctx, cl, g)
	if err != nil || !bound {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
	defer cancel()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"))
	err = cl.GetAPIReader().Get(ctx, client.ObjectKey{Name: g.Admission.Policy.GetName()}, u)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// retract unbinds g's admission policy before its CRD is created anew: a
// binding left from a former CRD would refuse creates until the API
// server reads the new schema.
func (a *admissions) retract(ctx context.Context, cl cluster.Cluster, g Graph) error {
	return a.delete(ctx, cl, g.Admission.Binding)
}

// install applies g's admission policy and binding on cl where the API
// server serves MutatingAdmissionPolicy. The policy only saves work, so a
// cluster without the API, or one that refuses the policy, is logged and
// served all the same.
func (a *admissions) install(ctx context.Context, clusterName string, cl cluster.Cluster, g Graph) {
	served, err := a.servesPolicies(ctx, cl)
	if err == nil && served {
		err = a.apply(ctx, cl, g.Admission.Policy, g.Admission.Binding)
	}
	switch {
	case err != nil:
		a.opts.Logger.Info("admission policy not installed; the runtime stamps new instances itself",
			"cluster", clusterName, "graph", g.Name, "reason", err.Error())
	case !served:
		a.opts.Logger.V(1).Info("cluster does not serve MutatingAdmissionPolicy; the runtime stamps new instances itself",
			"cluster", clusterName, "graph", g.Name)
	}
}

// servesPolicies asks cl's discovery whether it serves
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy.
func (a *admissions) servesPolicies(ctx context.Context, cl cluster.Cluster) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
	defer cancel()
	served, err := servedKinds(ctx, cl, admissionv1.SchemeGroupVersion)
	return served["MutatingAdmissionPolicy"], err
}

// remove stops any binding of g's policy on its way to c, then deletes
// the policy, its binding and the probe's, if any was left.
func (a *admissions) remove(ctx context.Context, c Cluster, g Graph) error {
	a.fence.stop(fenceKey{cluster: c.Name, graph: g.Name})
	if g.Admission == nil {
		return nil
	}
	return a.delete(ctx, c.Cluster, g.Admission.all()...)
}

// apply applies typed objects with server-side apply.
func (a *admissions) apply(ctx context.Context, cl cluster.Cluster, objs ...client.Object) error {
	for _, obj := range objs {
		u, err := crds.ApplyIntent(obj)
		if err != nil {
			return err
		}
		reqCtx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
		err = cl.GetClient().Apply(reqCtx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(a.opts.FieldManager), client.ForceOwnership)
		cancel()
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// delete deletes admissionregistration objects by kind and name; one
// already gone, or a cluster without the API, is not an error.
func (a *admissions) delete(ctx context.Context, cl cluster.Cluster, objs ...client.Object) error {
	for _, obj := range objs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind(obj.GetObjectKind().GroupVersionKind().Kind))
		u.SetName(obj.GetName())
		reqCtx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
		err := cl.GetClient().Delete(reqCtx, u)
		cancel()
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			return fmt.Errorf("deleting %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}
