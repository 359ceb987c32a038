package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// This file binds the admission policy only once the API server can run it
// without refusing creates. For a group/version it has just started to
// serve, the API server answers every create that a MutatingAdmissionPolicy
// matches with 503 until it has read the kind's schema (it polls its
// OpenAPI every 5 s), whatever the policy's failure policy. So the policy
// is bound only after a dry-run create of a probe object, matched by a
// probe policy of its own (contract.AdmissionProbe), shows the schema found.
// Until then, and wherever the policy is off, the spoke runtime stamps new
// instances itself, one write more each.

const (
	// admissionProbePoll is how often the probe is sent.
	admissionProbePoll = 200 * time.Millisecond
	// admissionProbeTimeout bounds the wait for the API server to be ready;
	// after it the policy is left unbound until the next Ensure.
	admissionProbeTimeout = 2 * time.Minute
)

// activateAdmission binds g's admission policy on cl once it is safe, if cl
// serves MutatingAdmissionPolicy and the policy is not bound yet. It runs
// after the CRD is established, in a goroutine of its own bound to ctx.
func (f *FanOut) activateAdmission(ctx context.Context, clusterName string, cl cluster.Cluster, g *graph.Graph) {
	log := f.opts.Logger.WithValues("cluster", clusterName, "graph", g.Name)
	served, err := f.servesAdmissionPolicies(ctx, cl)
	if err != nil || !served {
		log.V(1).Info("admission policy not installed; the runtime stamps new instances itself", "served", served, "error", err)
		return
	}
	if bound, err := f.policyBound(ctx, cl, g); err != nil || bound {
		return
	}
	if err := f.applyObjects(ctx, cl, contract.AdmissionProbe(g)); err != nil {
		log.Info("admission probe not installed; the runtime stamps new instances itself", "reason", err.Error())
		return
	}
	defer func() { _ = deleteObjects(context.WithoutCancel(ctx), cl, contract.AdmissionProbe(g)) }()
	if err := f.waitAdmissionReady(ctx, cl, g); err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return // superseded, removed or disengaged (admission_fence.go)
		}
		log.Info("admission policy not bound; the runtime stamps new instances itself", "reason", err.Error())
		return
	}
	f.applyAdmission(ctx, clusterName, cl, g)
}

// waitAdmissionReady sends the dry-run probe until the probe policy's own
// error comes back: the API server found the kind's schema.
func (f *FanOut) waitAdmissionReady(ctx context.Context, cl cluster.Cluster, g *graph.Graph) error {
	last := "no answer yet"
	err := wait.PollUntilContextTimeout(ctx, admissionProbePoll, admissionProbeTimeout, true, func(ctx context.Context) (bool, error) {
		ctx, cancel := f.request(ctx)
		defer cancel()
		err := cl.GetClient().Create(ctx, contract.AdmissionProbeObject(g), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), contract.AdmissionProbeName(g)) {
			return true, nil
		}
		last = fmt.Sprintf("probe answered %v", err)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", last, err)
	}
	return nil
}

// retractAdmission unbinds g's admission policy before its CRD is created
// anew: a binding left from a former CRD would refuse creates until the
// API server reads the new schema.
func retractAdmission(ctx context.Context, cl cluster.Cluster, g *graph.Graph) error {
	return deleteObjects(ctx, cl, contract.AdmissionPolicy(g)[1:])
}

// policyBound reports whether g's admission policy binding exists on cl.
func (f *FanOut) policyBound(ctx context.Context, cl cluster.Cluster, g *graph.Graph) (bool, error) {
	ctx, cancel := f.request(ctx)
	defer cancel()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding"))
	err := cl.GetAPIReader().Get(ctx, client.ObjectKey{Name: contract.AdmissionPolicyName(g)}, u)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// applyObjects applies typed objects with server-side apply.
func (f *FanOut) applyObjects(ctx context.Context, cl cluster.Cluster, objs []client.Object) error {
	for _, obj := range objs {
		u, err := applyIntent(obj)
		if err != nil {
			return err
		}
		reqCtx, cancel := f.request(ctx)
		err = cl.GetClient().Apply(reqCtx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(f.opts.FieldManager), client.ForceOwnership)
		cancel()
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// deleteObjects deletes admissionregistration objects by kind and name; one
// already gone, or a cluster without the API, is not an error.
func deleteObjects(ctx context.Context, cl cluster.Cluster, objs []client.Object) error {
	for _, obj := range objs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind(obj.GetObjectKind().GroupVersionKind().Kind))
		u.SetName(obj.GetName())
		reqCtx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
		err := cl.GetClient().Delete(reqCtx, u)
		cancel()
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			return fmt.Errorf("deleting %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}
