package schemas_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/input"
	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/schemas"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// A CRD's kind resolves offline, with its scope, its fields and the
// object metadata every kind has; built-in kinds come from the snapshot.
func TestOfflineResolverKnowsCRDsAndBuiltinKinds(t *testing.T) {
	crds, err := schemas.ReadCRDs(input.Options{}, "../testdata/crds")
	require.NoError(t, err)
	docs, err := schemas.FromCRDs(crds)
	require.NoError(t, err)
	r, err := schemas.Offline(docs)
	require.NoError(t, err)

	widget := schema.GroupVersionKind{Group: "example.test", Version: "v1", Kind: "Widget"}
	s, err := r.ResolveSchema(widget)
	require.NoError(t, err)
	assert.Equal(t, []string{"integer"}, []string(s.Properties["spec"].Properties["size"].Type))
	assert.Equal(t, []string{"string"}, []string(s.Properties["metadata"].Properties["name"].Type))
	ns, err := r.IsNamespaced(widget)
	require.NoError(t, err)
	assert.True(t, ns)

	for gvk, namespaced := range map[schema.GroupVersionKind]bool{
		{Group: "apps", Version: "v1", Kind: "Deployment"}:                       true,
		{Version: "v1", Kind: "Namespace"}:                                       false,
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}: false,
	} {
		got, err := r.IsNamespaced(gvk)
		require.NoError(t, err, gvk)
		assert.Equal(t, namespaced, got, gvk)
	}
	_, err = r.ResolveSchema(schema.GroupVersionKind{Group: "example.test", Version: "v1", Kind: "Gadget"})
	assert.ErrorIs(t, err, graph.ErrSchemaNotFound)
	assert.True(t, schemas.NotFound(err))
}

// Strip drops descriptions of schemas but not a field named description.
func TestStripKeepsFieldsNamedDescription(t *testing.T) {
	out, err := schemas.Strip([]byte(`{"components":{"schemas":{"x.Thing":{"description":"a thing","type":"object","properties":{"description":{"description":"its text","type":"string"}},"x-kubernetes-group-version-kind":[{"group":"x","version":"v1","kind":"Thing"}]}}},"paths":{"/apis/x/v1/things":{"get":{"description":"list","x-kubernetes-group-version-kind":{"group":"x","version":"v1","kind":"Thing"}}},"/apis/x/v1/namespaces/{namespace}/things":{"get":{"x-kubernetes-group-version-kind":{"group":"x","version":"v1","kind":"Thing"}}}}}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"components":{"schemas":{"x.Thing":{"type":"object","properties":{"description":{"type":"string"}},"x-kubernetes-group-version-kind":[{"group":"x","version":"v1","kind":"Thing"}]}}},"paths":{"/apis/x/v1/namespaces/{namespace}/things":{"get":{"x-kubernetes-group-version-kind":{"group":"x","version":"v1","kind":"Thing"}}}}}`, string(out))
}
