package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// A child's name is often known before the resources its body reads: the
// webapp's Deployment cannot render without the ConfigMap, but its identity
// can.
func TestIdentityNeedsOnlyTheMetadataExpressions(t *testing.T) {
	g := compileFile(t, "webapp", graph.Options{})
	vals := graph.Values{"schema": instance("demo", map[string]any{"name": "demo", "image": "nginx", "replicas": int64(1), "port": int64(80)})}

	_, err := g.Node("deployment").Render(vals, nil)
	require.ErrorIs(t, err, graph.ErrPending)
	ns, name, err := g.Node("deployment").Identity(vals, nil)
	require.NoError(t, err)
	assert.Equal(t, "", ns, "the template names no namespace")
	assert.Equal(t, "demo", name)

	_, name, err = g.Node("configmap").Identity(vals, nil)
	require.NoError(t, err)
	assert.Equal(t, "demo-config", name)
}

func TestIdentityOfACollectionItemAndItsPendingCase(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: regions
spec:
  schema:
    apiVersion: v1alpha1
    kind: Regions
    spec:
      regions: '[]string'
  resources:
  - id: base
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: base
        namespace: shared
  - id: perRegion
    forEach:
    - region: ${schema.spec.regions}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${base.metadata.name}-${region}
`), graph.Options{})
	require.NoError(t, err)
	vals := graph.Values{"schema": instance("r", map[string]any{"regions": []any{"eu"}})}
	ns, name, err := g.Node("base").Identity(vals, nil)
	require.NoError(t, err)
	assert.Equal(t, [2]string{"shared", "base"}, [2]string{ns, name}, "literal metadata needs no evaluation")

	_, _, err = g.Node("perRegion").Identity(vals, map[string]any{"region": "eu"})
	require.ErrorIs(t, err, graph.ErrPending, "a name that reads another resource waits for it")
	vals["base"] = map[string]any{"metadata": map[string]any{"name": "base"}}
	_, name, err = g.Node("perRegion").Identity(vals, map[string]any{"region": "eu"})
	require.NoError(t, err)
	assert.Equal(t, "base-eu", name)
}
