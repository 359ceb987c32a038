package capi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	capiv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
)

// ControllerName names the hub controller that watches Clusters, and the
// source of the Events it records on them.
const ControllerName = "capi-provider"

// hub is what the provider uses of the hub cluster.
type hub struct {
	// reader reads the selected Clusters and the Secrets labelled
	// ClusterNameLabel, in Namespace.
	reader client.Reader
}

// SetupWithManager registers, on mgr's local (hub) manager, a controller
// that watches the Clusters and their kubeconfig Secrets. It uses a cache
// of its own, limited to Options.Namespace, to the Clusters
// Options.LabelSelector selects and to the Secrets labelled
// ClusterNameLabel, so the hub needs list and watch on
// clusters.cluster.x-k8s.io (v1beta2) and on Secrets in that namespace
// only, plus create and patch on events.k8s.io Events there. Call it once,
// before mgr.Start; mgr.Start then starts the provider.
func (p *Provider) SetupWithManager(mgr mcmanager.Manager) error {
	if mgr == nil || mgr.GetLocalManager() == nil {
		return fmt.Errorf("capi provider: a manager with a local manager is required")
	}
	return p.setupWithLocal(mgr.GetLocalManager())
}

func (p *Provider) setupWithLocal(local manager.Manager) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(capiv1beta2.AddToScheme(scheme))
	labelled, err := labels.NewRequirement(ClusterNameLabel, selection.Exists, nil)
	if err != nil {
		return fmt.Errorf("capi provider: %w", err)
	}
	objects, err := cache.New(local.GetConfig(), cache.Options{
		Scheme:            scheme,
		DefaultNamespaces: p.cacheNamespaces(),
		ByObject: map[client.Object]cache.ByObject{
			&capiv1beta2.Cluster{}: {Label: p.opts.LabelSelector},
			&corev1.Secret{}:       {Label: labels.NewSelector().Add(*labelled)},
		},
	})
	if err != nil {
		return fmt.Errorf("capi provider: creating the cache: %w", err)
	}
	if err := local.Add(objects); err != nil {
		return fmt.Errorf("capi provider: adding the cache: %w", err)
	}
	p.hub = hub{reader: objects}
	p.clusters.SetRecorder(local.GetEventRecorder(ControllerName))
	return ctrl.NewControllerManagedBy(local).
		Named(ControllerName).
		// SkipNameValidation: a process may run more than one provider.
		WithOptions(controller.Options{MaxConcurrentReconciles: p.opts.MaxConcurrentReconciles, SkipNameValidation: ptr.To(true)}).
		WatchesRawSource(source.Kind(objects, &capiv1beta2.Cluster{},
			&handler.TypedEnqueueRequestForObject[*capiv1beta2.Cluster]{})).
		WatchesRawSource(source.Kind(objects, &corev1.Secret{},
			handler.TypedEnqueueRequestsFromMapFunc(clusterOfSecret))).
		Complete(p)
}

// clusterOfSecret maps a kubeconfig Secret to its Cluster; Cluster API's
// other Secrets (certificate authorities, etcd, service account keys) map
// to nothing.
func clusterOfSecret(_ context.Context, s *corev1.Secret) []reconcile.Request {
	name := s.Labels[ClusterNameLabel]
	if name == "" || s.Name != name+KubeconfigSuffix {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: name}}}
}

func (p *Provider) cacheNamespaces() map[string]cache.Config {
	if p.opts.Namespace == "" {
		return nil // every namespace
	}
	return map[string]cache.Config{p.opts.Namespace: {}}
}
