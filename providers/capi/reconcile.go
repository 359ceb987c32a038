package capi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	capiv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/access"
	"github.com/fleetgraph/fleetgraph/providers/internal/engaged"
)

// Reconcile brings the cluster of one Cluster API Cluster in line with it:
// engaged from its kubeconfig Secret once its control plane is
// initialized, engaged again when the Secret is rotated, disengaged when
// the Cluster is deleted or the Secret goes. Problems are reported on the
// Cluster; an unreachable server is retried with backoff, anything else
// waits for the Cluster or its Secret to change.
func (p *Provider) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := p.clusters.WaitStarted(ctx); err != nil {
		return ctrl.Result{}, err
	}
	cl := &capiv1beta2.Cluster{}
	if err := p.hub.reader.Get(ctx, req.NamespacedName, cl); err != nil {
		if apierrors.IsNotFound(err) {
			p.clusters.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if cl.DeletionTimestamp != nil {
		p.clusters.Forget(req.NamespacedName) // being torn down
		return ctrl.Result{}, nil
	}
	// Events name the Cluster by its kind, which the manager's scheme may
	// not know.
	cl.SetGroupVersionKind(capiv1beta2.GroupVersion.WithKind("Cluster"))
	name := multicluster.ClusterName(cl.Name)
	if !p.clusters.Claim(cl, name) {
		return ctrl.Result{RequeueAfter: engaged.DuplicateRetry}, nil // until the other Cluster goes
	}
	if !controlPlaneReady(cl) {
		p.clusters.Fail(cl, name, ReasonControlPlaneNotReady, ErrControlPlaneNotReady)
		return ctrl.Result{}, nil // until the Cluster's status changes
	}
	s := &corev1.Secret{}
	key := types.NamespacedName{Namespace: cl.Namespace, Name: cl.Name + KubeconfigSuffix}
	if err := p.hub.reader.Get(ctx, key, s); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		p.clusters.Refuse(cl, name, fmt.Errorf("%w: no Secret %s labelled %s", access.ErrMissingKubeconfig, key.Name, ClusterNameLabel))
		return ctrl.Result{}, nil // until the Secret appears
	}
	data := s.Data[KubeconfigDataKey]
	hash := fmt.Sprintf("%x", sha256.Sum256(data))
	labels := maps.Clone(cl.Labels)
	if p.clusters.Refresh(name, hash, labels) {
		return ctrl.Result{}, nil
	}
	rc, err := p.opts.Safety.RESTConfig(data)
	if err != nil {
		p.clusters.Refuse(cl, name, fmt.Errorf("Secret %s: %w", key.Name, err))
		return ctrl.Result{}, nil
	}
	return p.clusters.Connect(ctx, cl, name, engaged.Access{Config: rc, Hash: hash, Labels: labels})
}

// controlPlaneReady reports whether the Cluster's control plane accepts
// requests: status.initialization.controlPlaneInitialized, which Cluster
// API sets once and never unsets, or its ControlPlaneInitialized
// condition.
func controlPlaneReady(cl *capiv1beta2.Cluster) bool {
	if p := cl.Status.Initialization.ControlPlaneInitialized; p != nil && *p {
		return true
	}
	return meta.IsStatusConditionPresentAndEqual(cl.Status.Conditions,
		capiv1beta2.ClusterControlPlaneInitializedCondition, metav1.ConditionTrue)
}
