//go:build integration

package spoke_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
)

// placedRGD renders one ConfigMap in the namespace the spec names.
const placedRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: placed
spec:
  schema:
    apiVersion: v1alpha1
    kind: Placed
    spec:
      target: string
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-config
        namespace: ${schema.spec.target}
      data:
        owner: ${schema.metadata.name}
`

func TestConfineToNamespaceRefusesChildrenElsewhere(t *testing.T) {
	ctx := context.Background()
	c, g, _ := servedOnOneSpokeWith(t, placedRGD, spoke.Options{ConfineToNamespace: true})
	createNamespace(t, c, "elsewhere")

	require.NoError(t, c.Create(ctx, newInstance(g, "team", "home", map[string]any{"target": "team"})))
	stateIs(t, c, g, "team", "home", contract.StateActive)
	configMapData(t, c, "team", "home-config", "owner", "home")

	require.NoError(t, c.Create(ctx, newInstance(g, "team", "away", map[string]any{"target": "elsewhere"})))
	errorNamingNode(t, c, g, "away", "OutsideNamespace", "config")
	readyMessageMentions(t, c, g, "team", "away", `elsewhere/away-config is in namespace "elsewhere", outside the instance's namespace "team"`)
	_, err := configMap(c, "elsewhere", "away-config")
	require.Error(t, err, "a refused child must not be written")
}

// Without the option, kro's behaviour: a template may place a child in any
// namespace.
func TestChildrenMayLeaveTheNamespaceByDefault(t *testing.T) {
	ctx := context.Background()
	c, g, _ := servedOnOneSpoke(t, placedRGD)
	createNamespace(t, c, "elsewhere")
	require.NoError(t, c.Create(ctx, newInstance(g, "team", "away", map[string]any{"target": "elsewhere"})))
	stateIs(t, c, g, "team", "away", contract.StateActive)
	configMapData(t, c, "elsewhere", "away-config", "owner", "away")
}
