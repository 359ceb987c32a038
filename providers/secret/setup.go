package secret

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/providers/internal/engaged"
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
	secrets, err := p.clusters.SetupWithLocal(local, engaged.Watch{
		Name:      ControllerName,
		Namespace: p.opts.Namespace,
		ByObject:  map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: p.opts.LabelSelector}},
		Sources: func(c cache.Cache) []source.Source {
			return []source.Source{source.Kind(c, &corev1.Secret{}, &handler.TypedEnqueueRequestForObject[*corev1.Secret]{})}
		},
		MaxConcurrentReconciles: p.opts.MaxConcurrentReconciles,
	}, p)
	if err != nil {
		return fmt.Errorf("secret provider: %w", err)
	}
	p.hub = hub{reader: secrets}
	return nil
}
