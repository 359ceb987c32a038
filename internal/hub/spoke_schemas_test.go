package hub

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

var gizmoGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gizmo"}

// gizmoDoc is example.com/v1's OpenAPI v3 document with a Gizmo whose
// spec.size has the given type.
func gizmoDoc(sizeType string) string {
	return fmt.Sprintf(`{"components": {"schemas": {"com.example.v1.Gizmo": {
  "type": "object",
  "properties": {
    "apiVersion": {"type": "string"}, "kind": {"type": "string"},
    "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
    "spec": {"type": "object", "properties": {"size": {"type": %q}}}},
  "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Gizmo"}]}}}}`, sizeType)
}

// docClient serves one example.com/v1 document and counts fetches.
type docClient struct {
	doc     string
	mu      sync.Mutex
	fetches int
}

func (c *docClient) Paths() (map[string]openapi.GroupVersion, error) {
	return map[string]openapi.GroupVersion{"apis/example.com/v1": c}, nil
}

func (c *docClient) Schema(string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetches++
	return []byte(c.doc), nil
}

func (c *docClient) ServerRelativeURL() string { return "/openapi/v3/apis/example.com/v1" }

func gizmoGraphSource(t testing.TB) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: gizmo-app}
spec:
  schema:
    apiVersion: v1alpha1
    kind: GizmoApp
    spec: {size: integer | default=3}
  resources:
  - id: gizmo
    template:
      apiVersion: example.com/v1
      kind: Gizmo
      metadata: {name: '${schema.metadata.name}'}
      spec: {size: '${schema.spec.size}'}
`), rgd))
	return rgd
}

// gizmoGraph is compiled against a hub whose Gizmo has an integer size.
func gizmoGraph(t testing.TB) *graph.Graph {
	t.Helper()
	hubSchema, err := resolver.New(&docClient{doc: gizmoDoc("integer")}, resolver.Options{}).ResolveSchema(gizmoGVK)
	require.NoError(t, err)
	g, err := graph.Compile(gizmoGraphSource(t), graph.Options{Resolver: graph.StaticResolver{gizmoGVK: hubSchema}})
	require.NoError(t, err)
	return g
}

// namedCluster stands for an engaged cluster; only its identity is used.
type namedCluster struct {
	cluster.Cluster
	name string
}

func TestSpokeSchemasReportADisagreeingSpokeAndCacheTheVerdict(t *testing.T) {
	g := gizmoGraph(t)
	clients := map[string]*docClient{"agrees": {doc: gizmoDoc("integer")}, "differs": {doc: gizmoDoc("string")}}
	f := &FanOut{}
	f.spokeSchemas.resolve = func(cl cluster.Cluster) (*resolver.Resolver, error) {
		return resolver.New(clients[cl.(*namedCluster).name], resolver.Options{}), nil
	}
	engagement, disengage := context.WithCancel(context.Background())
	defer disengage()

	assert.NoError(t, f.checkSpokeSchemas(Cluster{Name: "agrees", Cluster: &namedCluster{name: "agrees"}}, g))

	differs := Cluster{Name: "differs", Cluster: &namedCluster{name: "differs"}, Engagement: engagement}
	err := f.checkSpokeSchemas(differs, g)
	require.ErrorIs(t, err, ErrIncompatible)
	assert.Contains(t, err.Error(), `cluster "differs"`)
	assert.Contains(t, err.Error(), `kind example.com/v1, Kind=Gizmo: resource "gizmo": spec.size: ${schema.spec.size}: expression returns int but the field is string`)

	again := f.checkSpokeSchemas(differs, g)
	assert.Same(t, err, again, "the verdict is reused while the spoke's schemas stay the same")
	assert.Equal(t, 1, clients["differs"].fetches, "the spoke's document is fetched once")

	disengage()
	require.Eventually(t, func() bool {
		f.spokeSchemas.mu.Lock()
		defer f.spokeSchemas.mu.Unlock()
		_, ok := f.spokeSchemas.byName["differs"]
		return !ok
	}, 5*time.Second, 10*time.Millisecond, "a spoke's cache goes with its engagement")
}

func TestSpokeSchemasSkipAnUntypedGraph(t *testing.T) {
	g, err := graph.Compile(gizmoGraphSource(t), graph.Options{})
	require.NoError(t, err)
	f := &FanOut{}
	f.spokeSchemas.resolve = func(cluster.Cluster) (*resolver.Resolver, error) {
		t.Error("no schema is read for a graph compiled without schemas")
		return nil, fmt.Errorf("unexpected")
	}
	assert.NoError(t, f.checkSpokeSchemas(Cluster{Name: "any"}, g))
}

// BenchmarkSpokeSchemasSteadyState is the cost of the check when Ensure
// runs again for a graph and spoke already checked.
func BenchmarkSpokeSchemasSteadyState(b *testing.B) {
	g := gizmoGraph(b)
	f := &FanOut{}
	f.spokeSchemas.resolve = func(cluster.Cluster) (*resolver.Resolver, error) {
		return resolver.New(&docClient{doc: gizmoDoc("integer")}, resolver.Options{}), nil
	}
	c := Cluster{Name: "spoke", Cluster: &namedCluster{name: "spoke"}}
	require.NoError(b, f.checkSpokeSchemas(c, g))
	b.ReportAllocs()
	for b.Loop() {
		if err := f.checkSpokeSchemas(c, g); err != nil {
			b.Fatal(err)
		}
	}
}
