package engaged

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watch is the hub side of a provider: the objects it reads, through a
// cache of its own limited to a namespace and to selected objects (so the
// hub needs read access to those only), and the controller that reconciles
// them.
type Watch struct {
	// Name names the controller and the source of the Events recorded.
	Name string
	// Namespace limits the cache; "" is every namespace.
	Namespace string
	// Scheme knows the objects read; nil is the manager's.
	Scheme *runtime.Scheme
	// ByObject selects the objects of each kind the cache holds.
	ByObject map[client.Object]cache.ByObject
	// Sources are the controller's watches, on the cache.
	Sources func(cache.Cache) []source.Source
	// MaxConcurrentReconciles is how many objects are reconciled at once.
	MaxConcurrentReconciles int
}

// SetupWithLocal creates w's cache and adds it to local (the hub's
// manager), makes Events go to local's recorder, and registers w's
// controller with r. It returns the cache, to read the objects from.
func (c *Clusters) SetupWithLocal(local manager.Manager, w Watch, r reconcile.Reconciler) (client.Reader, error) {
	scheme := w.Scheme
	if scheme == nil {
		scheme = local.GetScheme()
	}
	opts := cache.Options{Scheme: scheme, ByObject: w.ByObject}
	if w.Namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{w.Namespace: {}}
	}
	if w.Scheme == nil {
		opts.Mapper = local.GetRESTMapper()
	}
	objects, err := cache.New(local.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("%s: creating the cache: %w", w.Name, err)
	}
	if err := local.Add(objects); err != nil {
		return nil, fmt.Errorf("%s: adding the cache: %w", w.Name, err)
	}
	c.SetRecorder(local.GetEventRecorder(w.Name))
	b := ctrl.NewControllerManagedBy(local).
		Named(w.Name).
		// SkipNameValidation: a process may run more than one provider (a
		// test, or hubs for two namespaces); they share the name, and so
		// their controller metrics.
		WithOptions(controller.Options{MaxConcurrentReconciles: w.MaxConcurrentReconciles, SkipNameValidation: ptr.To(true)})
	for _, s := range w.Sources(objects) {
		b = b.WatchesRawSource(s)
	}
	return objects, b.Complete(r)
}
