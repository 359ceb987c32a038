package clusterprofile

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/internal/engaged"
)

// Reconcile brings the cluster of one ClusterProfile in line with it: it
// is engaged with the profile's credentials unless the profile is gone,
// has none the platform accepts, or has reported its control plane
// unhealthy for longer than the grace. Problems are reported on the
// profile; an unreachable server or a failing plugin is retried with
// backoff, anything else waits for the profile (or its Secret) to change.
func (p *Provider) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := p.clusters.WaitStarted(ctx); err != nil {
		return ctrl.Result{}, err
	}
	cp := &ciav1alpha1.ClusterProfile{}
	if err := p.hub.reader.Get(ctx, req.NamespacedName, cp); err != nil {
		if apierrors.IsNotFound(err) {
			p.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if cp.DeletionTimestamp != nil {
		p.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	// Events name the profile by its kind, which the manager's scheme may
	// not know.
	cp.SetGroupVersionKind(ciav1alpha1.ClusterProfileSchemeGroupVersionKind)
	name := multicluster.ClusterName(cp.Name)
	if !p.clusters.Claim(cp, name) {
		return ctrl.Result{RequeueAfter: engaged.DuplicateRetry}, nil // until the other profile goes
	}
	labels := p.labelsOf(cp, name)
	grace, err := p.health(cp)
	if err != nil {
		p.clusters.Fail(cp, name, ReasonControlPlaneUnhealthy, err)
		p.dropCredential(req.NamespacedName)
		return ctrl.Result{}, nil // until the condition changes
	}
	res, err := p.connect(ctx, cp, name, labels)
	return soonest(res, grace), err
}

// connect engages the profile's cluster with a plugin's credential, if
// the profile offers an access provider the platform allows a plugin for,
// else with its kubeconfig Secret.
func (p *Provider) connect(ctx context.Context, cp *ciav1alpha1.ClusterProfile, name multicluster.ClusterName,
	labels map[string]string) (ctrl.Result, error) {
	if pl, ap := p.pluginFor(cp); pl != nil {
		return p.viaPlugin(ctx, cp, name, labels, *pl, ap)
	}
	return p.viaSecret(ctx, cp, name, labels)
}

// forget disengages the cluster of a profile that is gone.
func (p *Provider) forget(key types.NamespacedName) {
	p.clusters.Forget(key)
	p.dropCredential(key)
	p.lock.Lock()
	delete(p.skipped, key)
	p.lock.Unlock()
}

// soonest is res, looked at again after wait at the latest (0: no wait).
func soonest(res ctrl.Result, wait time.Duration) ctrl.Result {
	if wait > 0 && (res.RequeueAfter == 0 || wait < res.RequeueAfter) {
		res.RequeueAfter = wait
	}
	return res
}
