//go:build integration

package spoke_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// sharedRGD renders one ConfigMap whose name comes from the spec, so that
// two instances can ask for the same object.
const sharedRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: shared
spec:
  schema:
    apiVersion: v1alpha1
    kind: Shared
    spec:
      target: string
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.spec.target}
      data:
        owner: ${schema.metadata.name}
`

// createUserConfigMap creates a ConfigMap nobody manages and returns it as
// created.
func createUserConfigMap(t *testing.T, c client.Client, ns, name string) *unstructured.Unstructured {
	t.Helper()
	cm := configMapRef(ns, name)
	require.NoError(t, unstructured.SetNestedStringMap(cm.Object, map[string]string{"value": "user"}, "data"))
	require.NoError(t, c.Create(context.Background(), cm))
	return cm
}

// untouched asserts that the ConfigMap is still the very object given,
// unchanged (same UID and resourceVersion).
func untouched(t *testing.T, c client.Client, want *unstructured.Unstructured) {
	t.Helper()
	got, err := configMap(c, want.GetNamespace(), want.GetName())
	require.NoError(t, err)
	assert.Equal(t, want.GetUID(), got.GetUID())
	assert.Equal(t, want.GetResourceVersion(), got.GetResourceVersion(), "labels %v, data %v", got.GetLabels(), got.Object["data"])
}

// deleteInstance deletes an instance and waits until it is gone.
func deleteInstance(t *testing.T, c client.Client, g *graph.Graph, ns, name string) {
	t.Helper()
	require.NoError(t, c.Delete(context.Background(), newInstance(g, ns, name, nil)))
	eventually(t, func() (bool, string) {
		_, err := getInstance(t, c, g, ns, name)
		return apierrors.IsNotFound(err), "instance still there"
	})
}

func TestAnUnownedObjectIsNeitherTakenOverNorDeleted(t *testing.T) {
	ctx := context.Background()
	c, g, _ := servedOnOneSpoke(t, pairRGD)
	mine := createUserConfigMap(t, c, "team", "mine-left")

	require.NoError(t, c.Create(ctx, newInstance(g, "team", "mine", map[string]any{})))
	errorNamingNode(t, c, g, "mine", "OwnershipConflict", "left")
	readyMessageMentions(t, c, g, "team", "mine", "team/mine-left")
	untouched(t, c, mine)

	deleteInstance(t, c, g, "team", "mine")
	untouched(t, c, mine)
}

func TestAdoptUnownedTakesOverAnUnlabelledObject(t *testing.T) {
	ctx := context.Background()
	c, g, _ := servedOnOneSpokeWith(t, pairRGD, spoke.Options{AdoptUnowned: true})
	createUserConfigMap(t, c, "team", "adopted-left")

	require.NoError(t, c.Create(ctx, newInstance(g, "team", "adopted", map[string]any{})))
	stateIs(t, c, g, "team", "adopted", contract.StateActive)
	configMapData(t, c, "team", "adopted-left", "value", "a")
	inst, err := getInstance(t, c, g, "team", "adopted")
	require.NoError(t, err)
	cm, err := configMap(c, "team", "adopted-left")
	require.NoError(t, err)
	assert.Equal(t, string(inst.GetUID()), cm.GetLabels()[contract.LabelInstanceUID])

	deleteInstance(t, c, g, "team", "adopted")
	gone(t, c, "team", "adopted-left")
}

func TestTwoInstancesRenderingOneChild(t *testing.T) {
	ctx := context.Background()
	c, g, _ := servedOnOneSpokeWith(t, sharedRGD, spoke.Options{AdoptUnowned: true})
	require.NoError(t, c.Create(ctx, newInstance(g, "team", "first", map[string]any{"target": "one"})))
	stateIs(t, c, g, "team", "first", contract.StateActive)
	configMapData(t, c, "team", "one", "owner", "first")
	held, err := configMap(c, "team", "one")
	require.NoError(t, err)

	t.Run("the second is refused, even with AdoptUnowned", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(g, "team", "second", map[string]any{"target": "one"})))
		errorNamingNode(t, c, g, "second", "OwnershipConflict", "config")
		readyMessageMentions(t, c, g, "team", "second", "team/first")
		untouched(t, c, held)
	})

	t.Run("deleting the second leaves the first's child intact", func(t *testing.T) {
		deleteInstance(t, c, g, "team", "second")
		untouched(t, c, held)
		stateIs(t, c, g, "team", "first", contract.StateActive)
	})
}

func TestLongInstanceNameBecomesActive(t *testing.T) {
	ctx := context.Background()
	c, g, _ := servedOnOneSpoke(t, pairRGD)
	name := strings.Repeat("a", 62) + "-" + strings.Repeat("b", 7)
	require.Len(t, name, 70)
	require.Equal(t, byte('-'), name[62], "the 63rd character is a dash")

	require.NoError(t, c.Create(ctx, newInstance(g, "team", name, map[string]any{})))
	stateIs(t, c, g, "team", name, contract.StateActive)
	configMapData(t, c, "team", name+"-right", "value", "a")
}
