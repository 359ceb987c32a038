//go:build integration

package spoke_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// gatedRGD: "settings" is an external ConfigMap; "db" is a Deployment that
// is ready only when it reports a ready replica; "app" waits for db.
const gatedRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: gated
spec:
  schema:
    apiVersion: v1alpha1
    kind: Gated
    spec:
      image: string | default="nginx"
  resources:
  - id: settings
    externalRef:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: settings
  - id: copy
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-copy
      data:
        color: ${settings.data.color}
  - id: db
    readyWhen:
    - ${has(db.status.readyReplicas) && db.status.readyReplicas >= 1}
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${schema.metadata.name}-db
      spec:
        replicas: 1
        selector:
          matchLabels:
            app: ${schema.metadata.name}-db
        template:
          metadata:
            labels:
              app: ${schema.metadata.name}-db
          spec:
            containers:
            - name: db
              image: ${schema.spec.image}
  - id: app
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-app
      data:
        db: ${db.metadata.name}
`

func TestExternalRefAndReadiness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "gated"
	c, g, _ := servedOnOneSpoke(t, ns, gatedRGD)
	require.NoError(t, c.Create(ctx, newInstance(g, ns, "svc", map[string]any{})))

	t.Run("a missing external reference holds the instance in progress", func(t *testing.T) {
		readyMessageMentions(t, c, g, ns, "svc", "settings")
	})

	t.Run("an external reference change propagates to the children", func(t *testing.T) {
		settings := configMapRef(ns, "settings")
		settings.Object["data"] = map[string]any{"color": "red"}
		require.NoError(t, c.Create(ctx, settings))
		configMapData(t, c, ns, "svc-copy", "color", "red")
		require.NoError(t, c.Patch(ctx, configMapRef(ns, "settings"),
			client.RawPatch(types.MergePatchType, []byte(`{"data":{"color":"blue"}}`))))
		configMapData(t, c, ns, "svc-copy", "color", "blue")
	})

	t.Run("readyWhen holds dependents back until the dependency is ready", func(t *testing.T) {
		readyMessageMentions(t, c, g, ns, "svc", "db: waiting for readyWhen")
		stateIs(t, c, g, ns, "svc", contract.StateInProgress)
		_, err := configMap(c, ns, "svc-app")
		require.True(t, apierrors.IsNotFound(err), "app must wait for db: %v", err)

		dep := &unstructured.Unstructured{}
		dep.SetAPIVersion("apps/v1")
		dep.SetKind("Deployment")
		dep.SetNamespace(ns)
		dep.SetName("svc-db")
		require.NoError(t, c.Status().Patch(ctx, dep, client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"replicas":1,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1}}`))))
		configMapData(t, c, ns, "svc-app", "db", "svc-db")
		stateIs(t, c, g, ns, "svc", contract.StateActive)
	})

	t.Run("an external reference is never deleted", func(t *testing.T) {
		require.NoError(t, c.Delete(ctx, newInstance(g, ns, "svc", nil)))
		eventually(t, func() (bool, string) {
			_, err := getInstance(t, c, g, ns, "svc")
			return apierrors.IsNotFound(err), "instance still there"
		})
		gone(t, c, ns, "svc-app")
		_, err := configMap(c, ns, "settings")
		require.NoError(t, err)
	})
}
