package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// Which nodes' observed values something reads: a dependent's template, a
// readyWhen, a status projection, a status condition; nothing reads the
// last one.
func TestReadsNamesTheNodesWhoseObservedValueIsRead(t *testing.T) {
	rgd := parseRGD(t, `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: reads}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Reads
    spec: {name: string}
    status:
      shown: ${projected.metadata.name}
      conditions:
      - "${runtime.newCondition({type: 'Up', status: conditioned.data.up == 'yes' ? 'True' : 'False', reason: 'Up', message: ''})}"
  resources:
  - id: upstream
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.spec.name}-up'}}
  - id: downstream
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${upstream.metadata.name}-down'}}
  - id: waited
    readyWhen: ['${waited.data.ready == "yes"}']
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.spec.name}-waited'}}
  - id: projected
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.spec.name}-projected'}}
  - id: conditioned
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.spec.name}-conditioned'}}
  - id: copies
    forEach: [{i: '${lists.range(3)}'}]
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.spec.name + string(i)}'}, data: {v: '${schema.spec.name}'}}
`)
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	for id, read := range map[string]bool{
		"upstream": true, "waited": true, "projected": true, "conditioned": true,
		"downstream": false, "copies": false, "absent": false,
	} {
		assert.Equal(t, read, g.Reads(id), id)
	}
}
