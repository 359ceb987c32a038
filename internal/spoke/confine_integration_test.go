//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
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
	t.Parallel()
	ctx := context.Background()
	const ns, elsewhere = "confined", "confined-elsewhere"
	c, g, _ := servedOnOneSpokeWith(t, ns, placedRGD, spoke.Config{Options: instance.Options{ConfineToNamespace: true}})
	createNamespace(t, c, elsewhere)

	require.NoError(t, c.Create(ctx, newInstance(g, ns, "home", map[string]any{"target": ns})))
	stateIs(t, c, g, ns, "home", contract.StateActive)
	configMapData(t, c, ns, "home-config", "owner", "home")

	require.NoError(t, c.Create(ctx, newInstance(g, ns, "away", map[string]any{"target": elsewhere})))
	errorNamingNode(t, c, g, ns, "away", "OutsideNamespace", "config")
	readyMessageMentions(t, c, g, ns, "away",
		fmt.Sprintf(`%[1]s/away-config is in namespace %[1]q, outside the instance's namespace %[2]q`, elsewhere, ns))
	_, err := configMap(c, elsewhere, "away-config")
	require.Error(t, err, "a refused child must not be written")
}

// Without the option, kro's behaviour: a template may place a child in any
// namespace.
func TestChildrenMayLeaveTheNamespaceByDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns, elsewhere = "unconfined", "unconfined-elsewhere"
	c, g, _ := servedOnOneSpoke(t, ns, placedRGD)
	createNamespace(t, c, elsewhere)
	require.NoError(t, c.Create(ctx, newInstance(g, ns, "away", map[string]any{"target": elsewhere})))
	stateIs(t, c, g, ns, "away", contract.StateActive)
	configMapData(t, c, elsewhere, "away-config", "owner", "away")
}
