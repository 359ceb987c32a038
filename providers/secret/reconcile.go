package secret

import (
	"context"
	"crypto/sha256"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fleetgraph/fleetgraph/providers/internal/engaged"
)

// Reconcile brings the cluster of one kubeconfig Secret in line with it.
// Problems with the kubeconfig are reported on the Secret and not retried
// (a change to the Secret retries); an unreachable server is retried with
// backoff.
func (p *Provider) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := p.clusters.WaitStarted(ctx); err != nil {
		return ctrl.Result{}, err
	}
	s := &corev1.Secret{}
	if err := p.hub.reader.Get(ctx, req.NamespacedName, s); err != nil {
		if apierrors.IsNotFound(err) {
			p.clusters.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if s.DeletionTimestamp != nil {
		p.clusters.Forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if !p.clusters.Claim(s, clusterName(s)) {
		return ctrl.Result{RequeueAfter: engaged.DuplicateRetry}, nil // until the other Secret goes
	}
	return p.reconcileSecret(ctx, s)
}

func (p *Provider) reconcileSecret(ctx context.Context, s *corev1.Secret) (ctrl.Result, error) {
	name := clusterName(s)
	data := s.Data[p.opts.DataKey]
	hash := fmt.Sprintf("%x", sha256.Sum256(data))
	if p.clusters.Refresh(name, hash, clusterLabels(s)) {
		return ctrl.Result{}, nil
	}
	rc, err := p.opts.Safety.RESTConfig(data)
	if err != nil {
		p.clusters.Refuse(s, name, err)
		return ctrl.Result{}, nil
	}
	return p.clusters.Connect(ctx, s, name, engaged.Access{Config: rc, Hash: hash, Labels: clusterLabels(s)})
}
