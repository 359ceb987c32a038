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
	capiv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/providers/internal/engaged"
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
	objects, err := p.clusters.SetupWithLocal(local, engaged.Watch{
		Name:      ControllerName,
		Namespace: p.opts.Namespace,
		Scheme:    scheme,
		ByObject: map[client.Object]cache.ByObject{
			&capiv1beta2.Cluster{}: {Label: p.opts.LabelSelector},
			&corev1.Secret{}:       {Label: labels.NewSelector().Add(*labelled)},
		},
		Sources: func(c cache.Cache) []source.Source {
			return []source.Source{
				source.Kind(c, &capiv1beta2.Cluster{}, &handler.TypedEnqueueRequestForObject[*capiv1beta2.Cluster]{}),
				source.Kind(c, &corev1.Secret{}, handler.TypedEnqueueRequestsFromMapFunc(clusterOfSecret)),
			}
		},
		MaxConcurrentReconciles: p.opts.MaxConcurrentReconciles,
	}, p)
	if err != nil {
		return fmt.Errorf("capi provider: %w", err)
	}
	p.hub = hub{reader: objects}
	return nil
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
