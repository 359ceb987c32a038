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
	"github.com/fleetgraph/fleetgraph/internal/instance"
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
	t.Parallel()
	ctx := context.Background()
	const ns = "unowned"
	c, g, _ := servedOnOneSpoke(t, ns, pairRGD)
	mine := createUserConfigMap(t, c, ns, "mine-left")

	require.NoError(t, c.Create(ctx, newInstance(g, ns, "mine", map[string]any{})))
	errorNamingNode(t, c, g, ns, "mine", "OwnershipConflict", "left")
	readyMessageMentions(t, c, g, ns, "mine", ns+"/mine-left")
	untouched(t, c, mine)

	deleteInstance(t, c, g, ns, "mine")
	untouched(t, c, mine)
}

func TestAdoptUnownedTakesOverAnUnlabelledObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "adopting"
	c, g, _ := servedOnOneSpokeWith(t, ns, pairRGD, spoke.Config{Options: instance.Options{AdoptUnowned: true}})
	createUserConfigMap(t, c, ns, "adopted-left")

	require.NoError(t, c.Create(ctx, newInstance(g, ns, "adopted", map[string]any{})))
	stateIs(t, c, g, ns, "adopted", contract.StateActive)
	configMapData(t, c, ns, "adopted-left", "value", "a")
	inst, err := getInstance(t, c, g, ns, "adopted")
	require.NoError(t, err)
	cm, err := configMap(c, ns, "adopted-left")
	require.NoError(t, err)
	assert.Equal(t, string(inst.GetUID()), cm.GetLabels()[contract.LabelInstanceUID])

	deleteInstance(t, c, g, ns, "adopted")
	gone(t, c, ns, "adopted-left")
}

func TestTwoInstancesRenderingOneChild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "shared"
	c, g, _ := servedOnOneSpokeWith(t, ns, sharedRGD, spoke.Config{Options: instance.Options{AdoptUnowned: true}})
	require.NoError(t, c.Create(ctx, newInstance(g, ns, "first", map[string]any{"target": "one"})))
	stateIs(t, c, g, ns, "first", contract.StateActive)
	configMapData(t, c, ns, "one", "owner", "first")
	held, err := configMap(c, ns, "one")
	require.NoError(t, err)

	t.Run("the second is refused, even with AdoptUnowned", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(g, ns, "second", map[string]any{"target": "one"})))
		errorNamingNode(t, c, g, ns, "second", "OwnershipConflict", "config")
		readyMessageMentions(t, c, g, ns, "second", ns+"/first")
		untouched(t, c, held)
	})

	t.Run("deleting the second leaves the first's child intact", func(t *testing.T) {
		deleteInstance(t, c, g, ns, "second")
		untouched(t, c, held)
		stateIs(t, c, g, ns, "first", contract.StateActive)
	})
}

func TestLongInstanceNameBecomesActive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "long-names"
	c, g, _ := servedOnOneSpoke(t, ns, pairRGD)
	name := strings.Repeat("a", 62) + "-" + strings.Repeat("b", 7)
	require.Len(t, name, 70)
	require.Equal(t, byte('-'), name[62], "the 63rd character is a dash")

	require.NoError(t, c.Create(ctx, newInstance(g, ns, name, map[string]any{})))
	stateIs(t, c, g, ns, name, contract.StateActive)
	configMapData(t, c, ns, name+"-right", "value", "a")
}
