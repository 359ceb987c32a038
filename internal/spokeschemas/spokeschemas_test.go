package spokeschemas

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/hub"
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

// docClient serves one example.com/v1 document, listed with a hash of its
// content as the API server lists it, and counts fetches.
type docClient struct {
	doc     string
	mu      sync.Mutex
	fetches int
}

var _ openapi.Client = &docClient{}

func (c *docClient) Paths() (map[string]openapi.GroupVersion, error) {
	return map[string]openapi.GroupVersion{"apis/example.com/v1": c}, nil
}

func (c *docClient) Schema(string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetches++
	return []byte(c.doc), nil
}

func (c *docClient) ServerRelativeURL() string {
	return fmt.Sprintf("/openapi/v3/apis/example.com/v1?hash=%x", sha256.Sum256([]byte(c.doc)))
}

func (c *docClient) fetched() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches
}

// noOpenAPI is a cluster that serves no OpenAPI v3 listing.
type noOpenAPI struct{}

func (noOpenAPI) Paths() (map[string]openapi.GroupVersion, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{}, "openapi/v3")
}

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

// namedCluster stands for an engaged cluster; only its name is used.
type namedCluster struct {
	cluster.Cluster
	name string
}

func checkerWith(clients map[string]openapi.Client) *Checker {
	f := &Checker{}
	f.openAPI = func(cl cluster.Cluster) (openapi.Client, error) {
		return clients[cl.(*namedCluster).name], nil
	}
	return f
}

func spoke(name string) cluster.Cluster { return &namedCluster{name: name} }

func TestSpokeSchemasReportADisagreeingSpokeAndShareVerdicts(t *testing.T) {
	g := gizmoGraph(t)
	agrees, differs, differsToo := &docClient{doc: gizmoDoc("integer")}, &docClient{doc: gizmoDoc("string")}, &docClient{doc: gizmoDoc("string")}
	f := checkerWith(map[string]openapi.Client{"agrees": agrees, "differs": differs, "differs-too": differsToo, "bare": noOpenAPI{}})

	assert.NoError(t, f.Check(context.Background(), spoke("agrees"), g))
	assert.NoError(t, f.Check(context.Background(), spoke("bare"), g), "a cluster without OpenAPI describes no kind")

	err := f.Check(context.Background(), spoke("differs"), g)
	require.ErrorIs(t, err, hub.ErrIncompatible)
	assert.Contains(t, err.Error(), `kind example.com/v1, Kind=Gizmo: resource "gizmo": spec.size: ${schema.spec.size}: expression returns int but the field is string`)

	assert.Equal(t, err, f.Check(context.Background(), spoke("differs"), g))
	assert.Equal(t, 1, differs.fetched(), "the verdict is reused while the spoke lists the same document")

	err = f.Check(context.Background(), spoke("differs-too"), g)
	require.ErrorIs(t, err, hub.ErrIncompatible)
	assert.Equal(t, 0, differsToo.fetched(), "a spoke listing a document already checked shares its verdict")
}

func TestSpokeSchemasSkipAnUntypedGraph(t *testing.T) {
	g, err := graph.Compile(gizmoGraphSource(t), graph.Options{})
	require.NoError(t, err)
	f := &Checker{}
	f.openAPI = func(cluster.Cluster) (openapi.Client, error) {
		t.Error("no schema is read for a graph compiled without schemas")
		return nil, fmt.Errorf("unexpected")
	}
	assert.NoError(t, f.Check(context.Background(), spoke("any"), g))
}

// BenchmarkSpokeSchemasSteadyState is the cost of the check when Ensure
// runs again for a graph and a spoke whose documents were checked, less
// the listing's GET (a fake answers it here).
func BenchmarkSpokeSchemasSteadyState(b *testing.B) {
	g := gizmoGraph(b)
	f := checkerWith(map[string]openapi.Client{"spoke": &docClient{doc: gizmoDoc("integer")}})
	require.NoError(b, f.Check(context.Background(), spoke("spoke"), g))
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Check(context.Background(), spoke("spoke"), g); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSpokeSchemasParseAHashedDocumentOnceForEveryGraph(t *testing.T) {
	one, other := &docClient{doc: gizmoDoc("integer")}, &docClient{doc: gizmoDoc("integer")}
	f := checkerWith(map[string]openapi.Client{"one": one, "other": other})

	require.NoError(t, f.Check(context.Background(), spoke("one"), gizmoGraph(t)))
	require.NoError(t, f.Check(context.Background(), spoke("other"), gizmoGraph(t)), "a new graph, another spoke, the same document")
	require.NoError(t, f.Check(context.Background(), spoke("one"), gizmoGraph(t)))

	assert.Equal(t, 1, one.fetched()+other.fetched(), "the document is fetched and parsed once, whoever lists it")
}

func TestSpokeSchemasFetchAChangedDocumentAgain(t *testing.T) {
	c := &docClient{doc: gizmoDoc("integer")}
	f := checkerWith(map[string]openapi.Client{"spoke": c})
	require.NoError(t, f.Check(context.Background(), spoke("spoke"), gizmoGraph(t)))

	c.mu.Lock()
	c.doc = gizmoDoc("string") // the CRD changed: a new hash
	c.mu.Unlock()

	err := f.Check(context.Background(), spoke("spoke"), gizmoGraph(t))
	require.ErrorIs(t, err, hub.ErrIncompatible)
	assert.Equal(t, 2, c.fetched())
}

// A new graph fanned out to many spokes at once that list the same
// documents is type-checked once: the spokes that ask while the check
// runs wait for its verdict, disagreement included, instead of each
// checking the graph again (the CPU a fleet of thousands would spend at
// once on every new graph).
func TestSpokesAskingAtOnceShareOneCheck(t *testing.T) {
	g := gizmoGraph(t)
	const spokes = 8
	clients := map[string]openapi.Client{}
	for i := range spokes {
		clients[fmt.Sprint(i)] = &docClient{doc: gizmoDoc("string")}
	}
	f := checkerWith(clients)
	var mu sync.Mutex
	checks := 0
	release := make(chan struct{})
	f.recheck = func(g *graph.Graph, r graph.SchemaResolver) error {
		mu.Lock()
		checks++
		mu.Unlock()
		<-release
		return g.CheckSchemas(r)
	}
	errs := make(chan error, spokes)
	for i := range spokes {
		go func() { errs <- f.Check(context.Background(), spoke(fmt.Sprint(i)), g) }()
	}
	require.Eventually(t, func() bool { return f.waiting() == spokes-1 }, 10*time.Second, time.Millisecond,
		"every other spoke waits for the check under way")
	close(release)
	for range spokes {
		err := <-errs
		require.ErrorIs(t, err, hub.ErrIncompatible)
		assert.Contains(t, err.Error(), "expression returns int but the field is string")
	}
	assert.Equal(t, 1, checks)
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Empty(t, f.checking, "no check left under way")
}

// waiting is how many callers wait for a check under way.
func (s *Checker) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.checking {
		n += c.waiters
	}
	return n
}

// A spoke waiting for another spoke's check stops waiting when its own
// context ends (its hub stops), and a check that panics still releases
// the spokes waiting for it, with an error and no verdict kept.
func TestAWaitForAnotherSpokesCheckEnds(t *testing.T) {
	g := gizmoGraph(t)
	doc := gizmoDoc("integer")
	f := checkerWith(map[string]openapi.Client{"a": &docClient{doc: doc}, "b": &docClient{doc: doc}, "c": &docClient{doc: doc}})
	release := make(chan struct{})
	f.recheck = func(*graph.Graph, graph.SchemaResolver) error {
		<-release
		panic("a check that fails hard")
	}
	checked := make(chan any, 1)
	go func() {
		defer func() { checked <- recover() }()
		_ = f.Check(context.Background(), spoke("a"), g)
	}()
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.checking) == 1 }, 10*time.Second, time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- f.Check(ctx, spoke("b"), g) }()
	waiting := make(chan error, 1)
	go func() { waiting <- f.Check(context.Background(), spoke("c"), g) }()
	require.Eventually(t, func() bool { return f.waiting() == 2 }, 10*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-stopped, context.Canceled)

	close(release)
	assert.Equal(t, "a check that fails hard", <-checked, "the panic goes on to the caller that checked")
	err := <-waiting
	require.ErrorIs(t, err, errNoVerdict)
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Empty(t, f.verdicts, "no verdict kept")
	assert.Empty(t, f.checking)
}
