package testing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcnamespace "sigs.k8s.io/multicluster-runtime/providers/namespace"
)

var (
	_ multicluster.Provider         = &NamespaceProvider{}
	_ multicluster.ProviderRunnable = &NamespaceProvider{}
	_ cluster.Cluster               = &namespaceCluster{}
	_ client.Client                 = &namespaceClient{}
	_ cache.Cache                   = &namespaceCache{}
)

// ErrSharedInformer is returned by a namespace cluster's cache for
// RemoveInformer: its informers are shared by every namespace cluster.
var ErrSharedInformer = errors.New("the informer is shared by every namespace cluster and cannot be removed by one")

// NamespaceProviderOptions configures a NamespaceProvider.
type NamespaceProviderOptions struct {
	// Prefix limits the clusters to namespaces whose name starts with it.
	// Defaults to "": every namespace is a cluster, kube-system included.
	Prefix string
	// Cluster options for the one cluster object all namespaces share.
	// Defaults to none.
	Cluster []cluster.Option
}

// NamespaceProvider is multicluster-runtime's namespace provider (each
// namespace of one API server is a cluster, whose only namespace is
// "default") made complete enough for the hub. multicluster-runtime's
// NamespacedCluster, at v0.24.1, panics on event recorders and on Patch,
// applies server-side to the real "default" namespace, and refuses
// cluster-scoped objects (so a CRD can be neither read nor applied). The
// clusters engaged here map namespaced objects to and from their namespace
// for every verb, including Patch and Apply, pass cluster-scoped ones
// through to the shared server, and record events in the namespace. The
// namespace discovery and engagement are multicluster-runtime's.
//
// All clusters share one cluster object: one HTTP client, one REST mapper
// and one cache, whose informers each namespace cluster filters. Whatever
// one cluster writes cluster-scoped (a CRD, an admission policy) every
// other sees.
type NamespaceProvider struct {
	base   cluster.Cluster
	inner  *mcnamespace.Provider
	prefix string

	mu       sync.Mutex
	clusters map[multicluster.ClusterName]*namespaceCluster
}

// NewNamespaceProvider returns a provider of the namespaces of the API
// server at cfg. It starts the shared cluster object when started itself.
func NewNamespaceProvider(cfg *rest.Config, opts NamespaceProviderOptions) (*NamespaceProvider, error) {
	base, err := cluster.New(rest.CopyConfig(cfg), opts.Cluster...)
	if err != nil {
		return nil, fmt.Errorf("creating the shared cluster for %s: %w", cfg.Host, err)
	}
	return &NamespaceProvider{
		base:     base,
		inner:    mcnamespace.New(base),
		prefix:   opts.Prefix,
		clusters: map[multicluster.ClusterName]*namespaceCluster{},
	}, nil
}

// Start implements multicluster.ProviderRunnable: it starts the shared
// cluster object, then multicluster-runtime's namespace provider.
func (p *NamespaceProvider) Start(ctx context.Context, aware multicluster.Aware) error {
	errs := make(chan error, 1)
	go func() { errs <- p.base.Start(ctx) }()
	if !p.base.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("starting the shared cluster: %w", errors.Join(ctx.Err(), <-errs))
	}
	if err := p.inner.Start(ctx, namespaceAware{p: p, aware: aware}); err != nil {
		return err
	}
	return <-errs
}

// Get implements multicluster.Provider.
func (p *NamespaceProvider) Get(_ context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cl, ok := p.clusters[name]; ok {
		return cl, nil
	}
	return nil, multicluster.ErrClusterNotFound
}

// IndexField implements multicluster.Provider: the index is on the shared
// cache.
func (p *NamespaceProvider) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return p.base.GetFieldIndexer().IndexField(ctx, obj, field, extract)
}

// namespaceAware sits between multicluster-runtime's provider and the
// manager: it replaces each NamespacedCluster with a namespaceCluster.
type namespaceAware struct {
	p     *NamespaceProvider
	aware multicluster.Aware
}

func (a namespaceAware) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	if !strings.HasPrefix(string(name), a.p.prefix) {
		return nil
	}
	nc := newNamespaceCluster(a.p.base, cl, string(name))
	a.p.mu.Lock()
	a.p.clusters[name] = nc
	a.p.mu.Unlock()
	context.AfterFunc(ctx, func() {
		a.p.mu.Lock()
		if a.p.clusters[name] == nc {
			delete(a.p.clusters, name)
		}
		a.p.mu.Unlock()
	})
	return a.aware.Engage(ctx, name, nc)
}

// namespaceCluster is one namespace of the shared cluster seen as a cluster.
type namespaceCluster struct {
	cluster.Cluster // the shared one
	ns              string
	client          *namespaceClient
	reader          namespaceReader
	cache           *namespaceCache
}

// newNamespaceCluster wraps base for namespace ns; scoped is
// multicluster-runtime's NamespacedCluster, whose informers filter by
// namespace.
func newNamespaceCluster(base, scoped cluster.Cluster, ns string) *namespaceCluster {
	m := nsMapper{ns: ns, mapper: base.GetRESTMapper(), scheme: base.GetScheme()}
	return &namespaceCluster{
		Cluster: base,
		ns:      ns,
		client:  &namespaceClient{Client: base.GetClient(), reader: namespaceReader{r: base.GetClient(), m: m}, m: m},
		reader:  namespaceReader{r: base.GetAPIReader(), m: m},
		cache:   &namespaceCache{Cache: base.GetCache(), scoped: scoped.GetCache(), reader: namespaceReader{r: base.GetCache(), m: m}, m: m},
	}
}

func (c *namespaceCluster) GetClient() client.Client        { return c.client }
func (c *namespaceCluster) GetAPIReader() client.Reader     { return c.reader }
func (c *namespaceCluster) GetCache() cache.Cache           { return c.cache }
func (c *namespaceCluster) Start(ctx context.Context) error { return nil } // shared: the provider starts it

func (c *namespaceCluster) GetEventRecorder(name string) events.EventRecorder {
	return namespaceRecorder{r: c.Cluster.GetEventRecorder(name), ns: c.ns}
}

// nsMapper translates between the cluster's "default" namespace and the
// namespace on the server, for namespaced kinds only.
type nsMapper struct {
	ns     string
	mapper meta.RESTMapper
	scheme *runtime.Scheme
}

func (m nsMapper) namespaced(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func (m nsMapper) gvkOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if !gvk.Empty() {
		return gvk, nil
	}
	gvks, _, err := m.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %w", obj, err)
	}
	return gvks[0], nil
}

// enter moves obj into the server's namespace when its kind is namespaced
// and returns how to move it back. Objects outside "default" do not exist
// in this cluster.
func (m nsMapper) enter(obj interface {
	runtime.Object
	GetNamespace() string
	SetNamespace(string)
	GetName() string
}) (func(), error) {
	gvk, err := m.gvkOf(obj)
	if err != nil {
		return nil, err
	}
	ok, err := m.namespaced(gvk)
	if err != nil || !ok {
		return func() {}, err
	}
	if ns := obj.GetNamespace(); ns != metav1.NamespaceDefault {
		return nil, apierrors.NewInvalid(gvk.GroupKind(), obj.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("metadata", "namespace"), ns, "a namespace cluster has only namespace \"default\"")})
	}
	obj.SetNamespace(m.ns)
	return func() { obj.SetNamespace(metav1.NamespaceDefault) }, nil
}

// namespaceReader reads through r, a reader of the whole server.
type namespaceReader struct {
	r client.Reader
	m nsMapper
}

func (r namespaceReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := r.m.gvkOf(obj)
	if err != nil {
		return err
	}
	if ok, err := r.m.namespaced(gvk); err != nil || !ok {
		if err != nil {
			return err
		}
		return r.r.Get(ctx, key, obj, opts...)
	}
	if key.Namespace != metav1.NamespaceDefault {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	key.Namespace = r.m.ns
	if err := r.r.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	obj.SetNamespace(metav1.NamespaceDefault)
	return nil
}

func (r namespaceReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := r.m.gvkOf(list)
	if err != nil {
		return err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	if ok, err := r.m.namespaced(gvk); err != nil || !ok {
		if err != nil {
			return err
		}
		return r.r.List(ctx, list, opts...)
	}
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	if lo.Namespace != "" && lo.Namespace != metav1.NamespaceDefault {
		return nil // no such namespace here: nothing in it
	}
	if err := r.r.List(ctx, list, append(opts, client.InNamespace(r.m.ns))...); err != nil {
		return err
	}
	return meta.EachListItem(list, func(o runtime.Object) error {
		o.(client.Object).SetNamespace(metav1.NamespaceDefault)
		return nil
	})
}

// namespaceClient is the cluster's client: reads through namespaceReader,
// writes with the namespace mapped.
type namespaceClient struct {
	client.Client // the shared one; Scheme, RESTMapper, GroupVersionKindFor, IsObjectNamespaced
	reader        namespaceReader
	m             nsMapper
}

func (c *namespaceClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

func (c *namespaceClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}

// in runs write with obj moved into the server's namespace.
func (c *namespaceClient) in(obj client.Object, write func() error) error {
	leave, err := c.m.enter(obj)
	if err != nil {
		return err
	}
	defer leave()
	return write()
}

func (c *namespaceClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.in(obj, func() error { return c.Client.Create(ctx, obj, opts...) })
}

func (c *namespaceClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.in(obj, func() error { return c.Client.Delete(ctx, obj, opts...) })
}

func (c *namespaceClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.in(obj, func() error { return c.Client.Update(ctx, obj, opts...) })
}

// Patch maps the object's namespace; the patch body must not name one (a
// merge or JSON patch of the fields to change does not).
func (c *namespaceClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.in(obj, func() error { return c.Client.Patch(ctx, obj, patch, opts...) })
}

// applyObject is what client.ApplyConfigurationFromUnstructured returns:
// it embeds the *unstructured.Unstructured it was made from, so the
// namespace can be mapped in place and the response lands in the caller's
// object.
type applyObject interface {
	runtime.ApplyConfiguration
	runtime.Object
	GetNamespace() string
	SetNamespace(string)
	GetName() string
}

// Apply maps the namespace of unstructured apply configurations; typed
// apply configurations are refused, their namespace cannot be mapped here.
func (c *namespaceClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return c.m.applyIn(obj, func() error { return c.Client.Apply(ctx, obj, opts...) })
}

// applyIn runs apply with obj, an unstructured apply configuration, moved
// into the server's namespace.
func (m nsMapper) applyIn(obj runtime.ApplyConfiguration, apply func() error) error {
	u, ok := obj.(applyObject)
	if !ok {
		return fmt.Errorf("namespace cluster %q: only unstructured apply configurations are supported, not %T", m.ns, obj)
	}
	leave, err := m.enter(u)
	if err != nil {
		return err
	}
	defer leave()
	return apply()
}

func (c *namespaceClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	gvk, err := c.m.gvkOf(obj)
	if err != nil {
		return err
	}
	if ok, err := c.m.namespaced(gvk); err != nil || !ok {
		if err != nil {
			return err
		}
		return c.Client.DeleteAllOf(ctx, obj, opts...)
	}
	return c.Client.DeleteAllOf(ctx, obj, append(opts, client.InNamespace(c.m.ns))...)
}

func (c *namespaceClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *namespaceClient) SubResource(sub string) client.SubResourceClient {
	return namespaceSubResource{c: c, sub: c.Client.SubResource(sub)}
}

// namespaceSubResource maps the parent object's namespace for a
// subresource; the subresource object comes back in "default".
type namespaceSubResource struct {
	c   *namespaceClient
	sub client.SubResourceClient
}

func (s namespaceSubResource) Get(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceGetOption) error {
	return s.c.in(obj, func() error {
		defer subResource.SetNamespace(metav1.NamespaceDefault)
		return s.sub.Get(ctx, obj, subResource, opts...)
	})
}

func (s namespaceSubResource) Create(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	return s.c.in(obj, func() error {
		defer subResource.SetNamespace(metav1.NamespaceDefault)
		return s.sub.Create(ctx, obj, subResource, opts...)
	})
}

func (s namespaceSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.c.in(obj, func() error { return s.sub.Update(ctx, obj, opts...) })
}

func (s namespaceSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.c.in(obj, func() error { return s.sub.Patch(ctx, obj, patch, opts...) })
}

func (s namespaceSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return s.c.m.applyIn(obj, func() error { return s.sub.Apply(ctx, obj, opts...) })
}

// namespaceCache reads the shared cache through namespaceReader and hands
// out multicluster-runtime's namespace-filtered informers for namespaced
// kinds, the shared informers for cluster-scoped ones.
type namespaceCache struct {
	cache.Cache // the shared one
	scoped      cache.Cache
	reader      namespaceReader
	m           nsMapper
}

func (c *namespaceCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

func (c *namespaceCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}

func (c *namespaceCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, err := c.m.gvkOf(obj)
	if err != nil {
		return nil, err
	}
	if ok, err := c.m.namespaced(gvk); err != nil || !ok {
		if err != nil {
			return nil, err
		}
		return c.Cache.GetInformer(ctx, obj, opts...)
	}
	return c.scoped.GetInformer(ctx, obj, opts...)
}

func (c *namespaceCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	ok, err := c.m.namespaced(gvk)
	if err != nil {
		return nil, err
	}
	if ok {
		return c.scoped.GetInformerForKind(ctx, gvk, opts...)
	}
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}

func (c *namespaceCache) RemoveInformer(context.Context, client.Object) error {
	return ErrSharedInformer
}

// namespaceRecorder records events about namespaced objects in the
// cluster's namespace on the server.
type namespaceRecorder struct {
	r  events.EventRecorder
	ns string
}

func (r namespaceRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.r.Eventf(r.moved(regarding), r.moved(related), eventtype, reason, action, note, args...)
}

func (r namespaceRecorder) moved(obj runtime.Object) runtime.Object {
	o, ok := obj.(client.Object)
	if !ok || o.GetNamespace() != metav1.NamespaceDefault {
		return obj
	}
	o = o.DeepCopyObject().(client.Object)
	o.SetNamespace(r.ns)
	return o
}
