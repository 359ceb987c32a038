package sdk

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/internal/clustervalues"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

func compileValue(t *testing.T, expr string) *graph.Graph {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.Unmarshal(fmt.Appendf(nil, `
metadata: {name: g}
spec:
  schema: {apiVersion: v1alpha1, kind: G}
  resources:
  - id: c
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {v: '%s'}}
`, expr), rgd))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	return g
}

// Until the hub has read the ClusterValues objects, a graph that reads
// cluster.values is not served (its instances would run without their
// values, then again with them); other graphs are, and so is every graph
// when the values are turned off.
func TestAGraphThatReadsValuesWaitsUntilTheyAreRead(t *testing.T) {
	values := spoke.Version{Graph: compileValue(t, `${cluster.values.?x.orValue("")}`)}
	labels := spoke.Version{Graph: compileValue(t, `${cluster.labels.?x.orValue("")}`)}
	c := &clusterValues{}
	assert.NoError(t, c.gate(values), "Options.Fleet.DisableClusterValues: nothing to wait for")
	c.ctrl = clustervalues.New(clustervalues.Options{})
	assert.ErrorIs(t, c.gate(values), errValuesNotRead)
	assert.NoError(t, c.gate(labels))
}
