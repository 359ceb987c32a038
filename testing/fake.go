package testing

import (
	"context"
	"fmt"
	"net/http"

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
)

var _ cluster.Cluster = &FakeCluster{}

// FakeClusterOptions configures a FakeCluster.
type FakeClusterOptions struct {
	// Scheme knows the typed objects the cluster serves. Unstructured
	// objects of any kind work without it. Defaults to client-go's scheme.
	Scheme *runtime.Scheme
	// Objects are present when the cluster is created. Defaults to none.
	Objects []client.Object
	// Build, if set, customises the fake client before it is built, e.g.
	// WithStatusSubresource or WithIndex. Defaults to nil.
	Build func(*fake.ClientBuilder)
	// EventBuffer is how many events each recorder keeps for inspection.
	// Defaults to 100.
	EventBuffer int
}

// FakeCluster is an in-memory cluster.Cluster backed by controller-runtime's
// fake client, for unit tests that must run in milliseconds.
//
// Its limits, plainly: there is no API server, so no admission, no
// validation against OpenAPI schemas, no CRD establishment (any kind can be
// stored, as if its CRD existed), no garbage collection of owned objects, and
// no server-side apply field ownership beyond what the fake client emulates.
// Watches are real in the sense that informers get events for every write
// made through the cluster's client, but reads through the cache go to the
// object store directly, so they are never stale. Field indexes must be
// declared through Build (WithIndex); IndexField on the cache records
// nothing. GetConfig returns an empty rest.Config: nothing can connect to a
// fake cluster.
type FakeCluster struct {
	client   client.WithWatch
	scheme   *runtime.Scheme
	cache    *fakeCache
	recorder *record.FakeRecorder
	events   *events.FakeRecorder
}

// NewFakeCluster returns a FakeCluster holding opts.Objects.
func NewFakeCluster(opts FakeClusterOptions) *FakeCluster {
	if opts.Scheme == nil {
		opts.Scheme = clientgoscheme.Scheme
	}
	if opts.EventBuffer == 0 {
		opts.EventBuffer = 100
	}
	b := fake.NewClientBuilder().WithScheme(opts.Scheme).WithObjects(opts.Objects...)
	if opts.Build != nil {
		opts.Build(b)
	}
	c := b.Build()
	return &FakeCluster{
		client:   c,
		scheme:   opts.Scheme,
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

// GetHTTPClient returns http.DefaultClient; nothing is served over HTTP.
func (c *FakeCluster) GetHTTPClient() *http.Client { return http.DefaultClient }

// GetConfig returns an empty config: a fake cluster has no address.
func (c *FakeCluster) GetConfig() *rest.Config { return &rest.Config{} }

// GetCache returns the cluster's cache, whose informers are fed by the fake
// client's watches.
func (c *FakeCluster) GetCache() cache.Cache { return c.cache }

// GetScheme returns the scheme the cluster was built with.
func (c *FakeCluster) GetScheme() *runtime.Scheme { return c.scheme }

// GetClient returns the fake client.
func (c *FakeCluster) GetClient() client.Client { return c.client }

// GetFieldIndexer returns the cache; see FakeCluster for the index limits.
func (c *FakeCluster) GetFieldIndexer() client.FieldIndexer { return c.cache }

// GetRESTMapper returns the fake client's REST mapper.
func (c *FakeCluster) GetRESTMapper() meta.RESTMapper { return c.client.RESTMapper() }

// GetAPIReader returns the fake client.
func (c *FakeCluster) GetAPIReader() client.Reader { return c.client }

// GetEventRecorderFor returns a recorder whose events a test can read
// through Recorder.
func (c *FakeCluster) GetEventRecorderFor(string) record.EventRecorder { return c.recorder }

// GetEventRecorder returns a recorder whose events a test can read through
// EventRecorder.
func (c *FakeCluster) GetEventRecorder(string) events.EventRecorder { return c.events }

// Start runs the cluster's informers until ctx is cancelled.
func (c *FakeCluster) Start(ctx context.Context) error {
	if err := c.cache.Start(ctx); err != nil {
		return fmt.Errorf("fake cluster cache: %w", err)
	}
	return nil
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
