package testing

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var _ cluster.Cluster = &FakeCluster{}

// FakeClusterOptions configures a FakeCluster.
type FakeClusterOptions struct {
	// Scheme knows the typed objects the cluster serves; its kinds are what
	// discovery and the REST mapper report, with those of the CRDs stored
	// in the cluster. Unstructured objects of any kind can be stored
	// without it; typed CRDs need apiextensions/v1 in it (unstructured ones
	// do not). Defaults to a new scheme holding client-go's types and
	// apiextensions/v1.
	Scheme *runtime.Scheme
	// Objects are present when the cluster is created. CRDs among them are
	// established at once. Defaults to none.
	Objects []client.Object
	// Build, if set, customises the fake client before it is built, e.g.
	// WithStatusSubresource or WithIndex. It must not replace the object
	// tracker (WithObjectTracker) or the REST mapper. Defaults to nil.
	Build func(*fake.ClientBuilder)
	// EventBuffer is how many events each recorder keeps for inspection.
	// Defaults to 100.
	EventBuffer int
}

// FakeCluster is an in-memory cluster.Cluster backed by controller-runtime's
// fake client, for unit tests that must run in milliseconds. sdk.Hub and
// the spoke runtime serve graphs on it as on a real cluster.
//
// It does what an API server does where a controller would notice:
//   - discovery: GetConfig and GetHTTPClient point at an HTTP server on
//     loopback, started on first use and stopped by Close or when Start
//     returns, that answers discovery (/api and /apis, aggregated or
//     legacy as the client asks, and each group version), /version and
//     /readyz from the scheme's kinds and those of the CRDs stored in the
//     cluster, so client-go's discovery client and controller-runtime's
//     dynamic REST mapper work against it. It serves nothing else: objects
//     are reached through GetClient only;
//   - a CRD written to the cluster is Established at once (NamesAccepted
//     and Established conditions, accepted names, stored versions) and its
//     served kinds become known to discovery and to the REST mapper; a
//     deleted CRD's kinds are forgotten (its objects are kept);
//   - objects get a UID, a creation timestamp and a generation (bumped when
//     anything but metadata and status changes, or deletion begins), and a
//     resourceVersion on every write; deleting an object that has
//     finalizers sets its deletionTimestamp;
//   - the status subresource of CRD-defined kinds that declare it: main
//     writes keep the stored status and status writes change only the
//     status (the fake client does the same for built-in kinds);
//   - defaults from a CRD's structural schema, on every write;
//   - background garbage collection: when an object is gone, the objects
//     whose owner references all point at gone objects are deleted;
//   - informers in every form the controller-runtime cache offers (typed,
//     unstructured and metadata-only PartialObjectMetadata), fed by the
//     fake client's watches.
//
// ManagerOptions makes a fake cluster a manager's own (hub) cluster.
//
// Its limits, plainly:
//   - no admission: webhooks and admission policies are neither run nor
//     advertised in discovery;
//   - no validation against OpenAPI schemas, no pruning of unknown fields,
//     no CEL validation rules, no conversion between CRD versions;
//   - no OpenAPI documents, so a SchemaResolver cannot read a fake cluster
//     (a hub on fake clusters needs sdk.Options.Compile.DisableSchemaResolver);
//   - a CRD's names are always accepted (no conflict checks), and it is
//     Established synchronously (a real one takes a moment); objects in
//     Options.Objects get no defaults from a CRD listed after them;
//   - no foreground deletion or blockOwnerDeletion;
//   - every kind gets a generation (real built-in kinds without a spec do
//     not);
//   - server-side apply field ownership is what the fake client emulates;
//     its managedFields are kept and returned (by reads, lists and
//     watches), so that checks of who wrote an object, such as the
//     runtime's ownership of children by its field manager, act on fake
//     clusters as on real ones;
//   - cache reads go to the object store directly, so they are never
//     stale; field indexes must be declared through Build (WithIndex):
//     IndexField on the cache records nothing.
type FakeCluster struct {
	client   *fakeAPIClient
	scheme   *runtime.Scheme
	api      *fakeAPI
	cache    *fakeCache
	recorder *record.FakeRecorder
	events   *events.FakeRecorder

	srvMu  sync.Mutex
	srv    *httptest.Server
	closed bool
}

// NewFakeCluster returns a FakeCluster holding opts.Objects.
func NewFakeCluster(opts FakeClusterOptions) *FakeCluster {
	if opts.Scheme == nil {
		opts.Scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(opts.Scheme); err != nil {
			panic(fmt.Sprintf("fake cluster: client-go scheme: %v", err))
		}
		if err := apiextensionsv1.AddToScheme(opts.Scheme); err != nil {
			panic(fmt.Sprintf("fake cluster: apiextensions scheme: %v", err))
		}
	}
	if opts.EventBuffer == 0 {
		opts.EventBuffer = 100
	}
	api := newFakeAPI(opts.Scheme)
	store := &fakeStore{scheme: opts.Scheme, api: api}
	b := fake.NewClientBuilder().WithScheme(opts.Scheme).
		WithObjectTracker(newFieldManagedStore(opts.Scheme, store)).
		WithRESTMapper(fakeMapper{api: api}).
		WithReturnManagedFields().
		WithObjects(opts.Objects...)
	if opts.Build != nil {
		opts.Build(b)
	}
	c := newFakeAPIClient(b.Build(), store)
	return &FakeCluster{
		client:   c,
		scheme:   opts.Scheme,
		api:      api,
		cache:    newFakeCache(c, opts.Scheme),
		recorder: record.NewFakeRecorder(opts.EventBuffer),
		events:   events.NewFakeRecorder(opts.EventBuffer),
	}
}

// Recorder returns the recorder behind GetEventRecorderFor, whose Events
// channel a test can read.
func (c *FakeCluster) Recorder() *record.FakeRecorder { return c.recorder }

// EventRecorder returns the recorder behind GetEventRecorder.
func (c *FakeCluster) EventRecorder() *events.FakeRecorder { return c.events }

// GetHTTPClient returns a client for the cluster's discovery server,
// starting it if needed.
func (c *FakeCluster) GetHTTPClient() *http.Client { return c.server().Client() }

// GetConfig returns a config for the cluster's discovery server, starting
// it if needed: enough for client-go's discovery client, nothing more.
func (c *FakeCluster) GetConfig() *rest.Config { return &rest.Config{Host: c.server().URL} }

// server returns the discovery server, started on first use.
func (c *FakeCluster) server() *httptest.Server {
	c.srvMu.Lock()
	defer c.srvMu.Unlock()
	if c.srv == nil {
		c.srv = httptest.NewServer(discoveryHandler(c.api))
		if c.closed {
			c.srv.Close()
		}
	}
	return c.srv
}

// Close stops the discovery server, if it was started. The cluster's
// client keeps working. Safe to call more than once, e.g. from t.Cleanup.
func (c *FakeCluster) Close() {
	c.srvMu.Lock()
	defer c.srvMu.Unlock()
	c.closed = true
	if c.srv != nil {
		c.srv.Close()
	}
}

// GetCache returns the cluster's cache, whose informers are fed by the fake
// client's watches.
func (c *FakeCluster) GetCache() cache.Cache { return c.cache }

// GetScheme returns the scheme the cluster was built with.
func (c *FakeCluster) GetScheme() *runtime.Scheme { return c.scheme }

// GetClient returns the fake client.
func (c *FakeCluster) GetClient() client.Client { return c.client }

// GetFieldIndexer returns the cache; see FakeCluster for the index limits.
func (c *FakeCluster) GetFieldIndexer() client.FieldIndexer { return c.cache }

// GetRESTMapper returns a REST mapper that knows the scheme's kinds and
// those of the CRDs stored in the cluster, as they come and go.
func (c *FakeCluster) GetRESTMapper() meta.RESTMapper { return c.client.RESTMapper() }

// GetAPIReader returns the fake client.
func (c *FakeCluster) GetAPIReader() client.Reader { return c.client }

// GetEventRecorderFor returns a recorder whose events a test can read
// through Recorder.
func (c *FakeCluster) GetEventRecorderFor(string) record.EventRecorder { return c.recorder }

// GetEventRecorder returns a recorder whose events a test can read through
// EventRecorder.
func (c *FakeCluster) GetEventRecorder(string) events.EventRecorder { return c.events }

// Start runs the cluster's informers until ctx is cancelled, then closes
// the discovery server.
func (c *FakeCluster) Start(ctx context.Context) error {
	defer c.Close()
	if err := c.cache.Start(ctx); err != nil {
		return fmt.Errorf("fake cluster cache: %w", err)
	}
	return nil
}

// ManagerOptions returns opts with the cluster as the manager's own (hub)
// cluster: its scheme, client, cache and REST mapper. Give the result, with
// GetConfig, to manager.New or mcmanager.New to run controllers on the hub
// cluster, e.g. sdk.Hub's RGD controller, without an API server. What the
// manager builds from the config alone does not reach the cluster's
// objects: GetAPIReader answers from the discovery server (NotFound), and
// events the manager's recorders send are dropped with a logged error.
// Start the manager, not the cluster: the manager starts the cache.
func (c *FakeCluster) ManagerOptions(opts manager.Options) manager.Options {
	opts.Scheme = c.scheme
	opts.NewClient = func(*rest.Config, client.Options) (client.Client, error) { return c.client, nil }
	opts.NewCache = func(*rest.Config, cache.Options) (cache.Cache, error) { return c.cache, nil }
	opts.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return c.GetRESTMapper(), nil }
	return opts
}

// FakeProvider is a Provider whose clusters are FakeClusters: the same
// add-while-running and remove-cancels-engagement behaviour, in memory.
type FakeProvider struct {
	*Provider
}

// NewFakeProvider returns an empty FakeProvider.
func NewFakeProvider() *FakeProvider {
	return &FakeProvider{Provider: NewProvider()}
}

// AddCluster creates a FakeCluster from opts and adds it under name. Like
// Provider.Add, it returns before the cluster is engaged.
func (p *FakeProvider) AddCluster(ctx context.Context, name string, opts FakeClusterOptions) (*FakeCluster, error) {
	c := NewFakeCluster(opts)
	if err := p.Add(ctx, name, c); err != nil {
		return nil, err
	}
	return c, nil
}
