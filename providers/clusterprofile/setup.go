package clusterprofile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/providers/internal/engaged"
)

// ControllerName names the hub controller that watches ClusterProfiles,
// and the source of the Events it records on them.
const ControllerName = "clusterprofile-provider"

// hub is what the provider uses of the hub cluster.
type hub struct {
	// reader reads the selected ClusterProfiles and the kubeconfig Secrets
	// labelled for this consumer, in Namespace.
	reader client.Reader
}

// SetupWithManager registers, on mgr's local (hub) manager, a controller
// that watches the ClusterProfiles and their kubeconfig Secrets. It uses a
// cache of its own, limited to Options.Namespace, to the profiles
// Options.LabelSelector selects and to the Secrets labelled
// ConsumerLabel=Options.ConsumerName, so the hub needs list and watch on
// clusterprofiles.multicluster.x-k8s.io and on Secrets in that namespace
// only, plus create and patch on events.k8s.io Events there. It returns
// an error wrapping ErrInvalidOptions when a credential plugin cannot be
// used. Call it once, before mgr.Start; mgr.Start then starts the
// provider.
func (p *Provider) SetupWithManager(mgr mcmanager.Manager) error {
	if err := validatePlugins(p.opts.CredentialPlugins); err != nil {
		return err
	}
	if mgr == nil || mgr.GetLocalManager() == nil {
		return fmt.Errorf("clusterprofile provider: a manager with a local manager is required")
	}
	return p.setupWithLocal(mgr.GetLocalManager())
}

func (p *Provider) setupWithLocal(local manager.Manager) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(ciav1alpha1.AddToScheme(scheme))
	objects, err := p.clusters.SetupWithLocal(local, engaged.Watch{
		Name:      ControllerName,
		Namespace: p.opts.Namespace,
		Scheme:    scheme,
		ByObject: map[client.Object]cache.ByObject{
			&ciav1alpha1.ClusterProfile{}: {Label: p.opts.LabelSelector},
			&corev1.Secret{}:              {Label: labels.SelectorFromSet(labels.Set{ConsumerLabel: p.opts.ConsumerName})},
		},
		Sources: func(c cache.Cache) []source.Source {
			return []source.Source{
				source.Kind(c, &ciav1alpha1.ClusterProfile{}, &handler.TypedEnqueueRequestForObject[*ciav1alpha1.ClusterProfile]{}),
				source.Kind(c, &corev1.Secret{}, handler.TypedEnqueueRequestsFromMapFunc(profileOfSecret)),
			}
		},
		MaxConcurrentReconciles: p.opts.MaxConcurrentReconciles,
	}, p)
	if err != nil {
		return fmt.Errorf("clusterprofile provider: %w", err)
	}
	p.hub = hub{reader: objects}
	return nil
}

// profileOfSecret maps a kubeconfig Secret to the profile it reaches.
func profileOfSecret(_ context.Context, s *corev1.Secret) []reconcile.Request {
	name := s.Labels[ProfileLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: name}}}
}
