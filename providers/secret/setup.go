package secret

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
)

// ControllerName names the hub controller that watches kubeconfig Secrets,
// and the source of the Events it records on them.
const ControllerName = "secret-provider"

// hub is what the provider uses of the hub cluster.
type hub struct {
	reader client.Reader // Secrets in Namespace matching LabelSelector
}

// SetupWithManager registers, on mgr's local (hub) manager, a controller
// that watches the kubeconfig Secrets. It uses a cache of its own, limited
// to Options.Namespace and Options.LabelSelector, so the hub needs list and
// watch on Secrets in that namespace only (plus create on events). Call it
// once, before mgr.Start; mgr.Start then starts the provider.
//
//	provider := secret.New(secret.Options{})
//	mgr, err := mcmanager.New(hubConfig, provider, manager.Options{})
//	err = provider.SetupWithManager(mgr)
//	err = mgr.Start(ctx)
func (p *Provider) SetupWithManager(mgr mcmanager.Manager) error {
	if mgr == nil || mgr.GetLocalManager() == nil {
		return fmt.Errorf("secret provider: a manager with a local manager is required")
	}
	return p.setupWithLocal(mgr.GetLocalManager())
}

func (p *Provider) setupWithLocal(local manager.Manager) error {
	secrets, err := cache.New(local.GetConfig(), cache.Options{
		Scheme:            local.GetScheme(),
		Mapper:            local.GetRESTMapper(),
		DefaultNamespaces: p.cacheNamespaces(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: p.opts.LabelSelector},
		},
	})
	if err != nil {
		return fmt.Errorf("secret provider: creating the Secret cache: %w", err)
	}
	if err := local.Add(secrets); err != nil {
		return fmt.Errorf("secret provider: adding the Secret cache: %w", err)
	}
	p.hub = hub{reader: secrets}
	p.clusters.SetRecorder(local.GetEventRecorder(ControllerName))
	return ctrl.NewControllerManagedBy(local).
		Named(ControllerName).
		// SkipNameValidation: a process may run more than one provider (a
		// test, or hubs for two namespaces); they share the name, and so
		// their controller metrics.
		WithOptions(controller.Options{MaxConcurrentReconciles: p.opts.MaxConcurrentReconciles, SkipNameValidation: ptr.To(true)}).
		WatchesRawSource(source.Kind(secrets, &corev1.Secret{}, &handler.TypedEnqueueRequestForObject[*corev1.Secret]{})).
		Complete(p)
}

func (p *Provider) cacheNamespaces() map[string]cache.Config {
	if p.opts.Namespace == "" {
		return nil // every namespace
	}
	return map[string]cache.Config{p.opts.Namespace: {}}
}
