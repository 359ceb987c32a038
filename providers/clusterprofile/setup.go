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
	"k8s.io/utils/ptr"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
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
	objects, err := cache.New(local.GetConfig(), cache.Options{
		Scheme:            scheme,
		DefaultNamespaces: p.cacheNamespaces(),
		ByObject: map[client.Object]cache.ByObject{
			&ciav1alpha1.ClusterProfile{}: {Label: p.opts.LabelSelector},
			&corev1.Secret{}:              {Label: labels.SelectorFromSet(labels.Set{ConsumerLabel: p.opts.ConsumerName})},
		},
	})
	if err != nil {
		return fmt.Errorf("clusterprofile provider: creating the cache: %w", err)
	}
	if err := local.Add(objects); err != nil {
		return fmt.Errorf("clusterprofile provider: adding the cache: %w", err)
	}
	p.hub = hub{reader: objects}
	p.clusters.SetRecorder(local.GetEventRecorder(ControllerName))
	return ctrl.NewControllerManagedBy(local).
		Named(ControllerName).
		// SkipNameValidation: a process may run more than one provider.
		WithOptions(controller.Options{MaxConcurrentReconciles: p.opts.MaxConcurrentReconciles, SkipNameValidation: ptr.To(true)}).
		WatchesRawSource(source.Kind(objects, &ciav1alpha1.ClusterProfile{},
			&handler.TypedEnqueueRequestForObject[*ciav1alpha1.ClusterProfile]{})).
		WatchesRawSource(source.Kind(objects, &corev1.Secret{},
			handler.TypedEnqueueRequestsFromMapFunc(profileOfSecret))).
		Complete(p)
}

// profileOfSecret maps a kubeconfig Secret to the profile it reaches.
func profileOfSecret(_ context.Context, s *corev1.Secret) []reconcile.Request {
	name := s.Labels[ProfileLabel]
	if name == "" {
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
