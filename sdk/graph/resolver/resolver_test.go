package resolver_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/openapitest"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	widgetGVK     = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	gadgetGVK     = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
)

func TestResolvesKindsWithReferencesInlined(t *testing.T) {
	r := resolver.New(openapitest.NewEmbeddedFileClient(), resolver.Options{})
	s, err := r.ResolveSchema(deploymentGVK)
	require.NoError(t, err)
	containers := s.Properties["spec"].Properties["template"].Properties["spec"].Properties["containers"]
	assert.Equal(t, "string", containers.Items.Schema.Properties["image"].Type[0], "$refs are resolved")

	again, err := r.ResolveSchema(deploymentGVK)
	require.NoError(t, err)
	assert.Same(t, s, again, "a cached kind resolves to the same schema")
}

func TestUnknownKindsWrapErrSchemaNotFound(t *testing.T) {
	r := resolver.New(openapitest.NewEmbeddedFileClient(), resolver.Options{})
	_, err := r.ResolveSchema(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Nope"})
	assert.ErrorIs(t, err, graph.ErrSchemaNotFound)
	_, err = r.ResolveSchema(widgetGVK)
	assert.ErrorIs(t, err, graph.ErrSchemaNotFound)
}

// countingClient serves one document for example.com/v1 that can change,
// and counts fetches.
type countingClient struct {
	mu      sync.Mutex
	doc     []byte
	fetches int
	// fail answers the next fetches with this error, failures times.
	fail     error
	failures int
}

func (c *countingClient) Paths() (map[string]openapi.GroupVersion, error) {
	return map[string]openapi.GroupVersion{"apis/example.com/v1": c}, nil
}

func (c *countingClient) Schema(string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetches++
	if c.failures > 0 {
		c.failures--
		return nil, c.fail
	}
	return c.doc, nil
}

func (c *countingClient) fetchCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches
}

func (c *countingClient) ServerRelativeURL() string { return "/openapi/v3/apis/example.com/v1" }

func (c *countingClient) set(doc string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.doc = []byte(doc)
}

const widgetDoc = `{"components": {"schemas": {"com.example.v1.Widget": {
  "type": "object",
  "properties": {"spec": {"$ref": "#/components/schemas/com.example.v1.WidgetSpec"}},
  "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}]},
  "com.example.v1.WidgetSpec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}`

const widgetAndGadgetDoc = `{"components": {"schemas": {
  "com.example.v1.Widget": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}]},
  "com.example.v1.Gadget": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Gadget"}]}}}}`

func TestCachesPerGroupVersionUntilTheTTL(t *testing.T) {
	now := time.Unix(0, 0)
	c := &countingClient{}
	c.set(widgetDoc)
	r := resolver.New(c, resolver.Options{TTL: time.Minute, Now: func() time.Time { return now }})

	s, err := r.ResolveSchema(widgetGVK)
	require.NoError(t, err)
	assert.Equal(t, "integer", s.Properties["spec"].Properties["size"].Type[0])
	_, err = r.ResolveSchema(widgetGVK)
	require.NoError(t, err)
	assert.Equal(t, 1, c.fetches)

	now = now.Add(2 * time.Minute)
	_, err = r.ResolveSchema(widgetGVK)
	require.NoError(t, err)
	assert.Equal(t, 2, c.fetches, "refetched after the TTL")

	r.Reset()
	_, err = r.ResolveSchema(widgetGVK)
	require.NoError(t, err)
	assert.Equal(t, 3, c.fetches, "refetched after Reset")
}

func TestMissRefetchesOnlyAStaleDocument(t *testing.T) {
	now := time.Unix(0, 0)
	c := &countingClient{}
	c.set(widgetDoc)
	r := resolver.New(c, resolver.Options{RefetchAfterMiss: 10 * time.Second, Now: func() time.Time { return now }})
	_, err := r.ResolveSchema(widgetGVK)
	require.NoError(t, err)

	c.set(widgetAndGadgetDoc) // a CRD was installed
	_, err = r.ResolveSchema(gadgetGVK)
	require.True(t, errors.Is(err, graph.ErrSchemaNotFound), "the document is fresh: no refetch yet")
	assert.Equal(t, 1, c.fetches)

	now = now.Add(11 * time.Second)
	_, err = r.ResolveSchema(gadgetGVK)
	require.NoError(t, err)
	assert.Equal(t, 2, c.fetches)
}

// lateClient serves no group-version until published is set.
type lateClient struct {
	countingClient
	published bool
}

func (c *lateClient) Paths() (map[string]openapi.GroupVersion, error) {
	if !c.published {
		return map[string]openapi.GroupVersion{}, nil
	}
	return c.countingClient.Paths()
}

func TestNewGroupVersionsAreFoundOnceStale(t *testing.T) {
	now := time.Unix(0, 0)
	c := &lateClient{}
	c.set(widgetDoc)
	r := resolver.New(c, resolver.Options{RefetchAfterMiss: time.Second, Now: func() time.Time { return now }})
	_, err := r.ResolveSchema(widgetGVK)
	require.ErrorIs(t, err, graph.ErrSchemaNotFound)

	c.published = true
	now = now.Add(2 * time.Second)
	_, err = r.ResolveSchema(widgetGVK)
	require.NoError(t, err)
}

func TestScopesComeFromTheServedPaths(t *testing.T) {
	r := resolver.New(openapitest.NewEmbeddedFileClient(), resolver.Options{})
	namespaced, err := r.IsNamespaced(deploymentGVK)
	require.NoError(t, err)
	assert.True(t, namespaced)
	namespaced, err = r.IsNamespaced(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	require.NoError(t, err)
	assert.False(t, namespaced)
	namespaced, err = r.IsNamespaced(schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"})
	require.NoError(t, err)
	assert.False(t, namespaced)
	_, err = r.IsNamespaced(widgetGVK)
	assert.ErrorIs(t, err, graph.ErrSchemaNotFound)
}

// A server error right after a CRD is installed (kcp answers 500 for a
// moment) is asked again; an error the server means is not.
func TestServerErrorsAreRetriedBriefly(t *testing.T) {
	c := &countingClient{fail: apierrors.NewInternalError(errors.New("CRD not found")), failures: 2}
	c.set(widgetDoc)
	r := resolver.New(c, resolver.Options{})
	_, err := r.ResolveSchema(widgetGVK)
	require.NoError(t, err)
	assert.Equal(t, 3, c.fetches, "two failures, then the document")

	forbidden := &countingClient{fail: apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no")), failures: 1}
	forbidden.set(widgetDoc)
	_, err = resolver.New(forbidden, resolver.Options{}).ResolveSchema(widgetGVK)
	assert.True(t, apierrors.IsForbidden(err), "got %v", err)
	assert.Equal(t, 1, forbidden.fetches, "a refusal is not retried")

	off := &countingClient{fail: apierrors.NewInternalError(errors.New("down")), failures: 1}
	off.set(widgetDoc)
	_, err = resolver.New(off, resolver.Options{RetryFor: -1}).ResolveSchema(widgetGVK)
	assert.True(t, apierrors.IsInternalError(err), "got %v", err)
	assert.Equal(t, 1, off.fetches, "retries turned off")
}
