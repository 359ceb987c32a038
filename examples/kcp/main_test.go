//go:build integration

package main

import (
	"context"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const settingsRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: settings
spec:
  schema:
    apiVersion: v1alpha1
    kind: Settings
    spec:
      color: string | default="blue"
    status:
      configMap: ${config.metadata.name}
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-settings
      data:
        color: ${schema.spec.color}
`

// Against a real kcp server: RGDs in root:platform are served in every
// workspace below root:tenants, and an instance's children stay in its own
// workspace.
func TestHubServesKCPWorkspaces(t *testing.T) {
	fgtesting.SetupLogs()
	k := fgtesting.StartKCP(t)
	ctx := context.Background()
	root := logicalcluster.NewPath("root")
	for _, ws := range []string{"platform", "tenants"} {
		_, err := k.CreateWorkspace(ctx, root, ws)
		require.NoError(t, err)
	}
	tenants := root.Join("tenants")
	for _, ws := range []string{"a", "b"} {
		_, err := k.CreateWorkspace(ctx, tenants, ws)
		require.NoError(t, err)
	}
	fgtesting.Start(t, func(ctx context.Context) error { return run(ctx, k.Config, root.Join("platform"), tenants) })

	hub := clientFor(t, k, root.Join("platform"))
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(settingsRGD), rgd))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(hub.Create(ctx, rgd.DeepCopy())))
	}, 2*time.Minute, 200*time.Millisecond, "the hub installs the RGD CRD in the platform workspace")

	a, b := clientFor(t, k, tenants.Join("a")), clientFor(t, k, tenants.Join("b"))
	inst := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"color": "green"}}}
	inst.SetAPIVersion("kro.run/v1alpha1")
	inst.SetKind("Settings")
	inst.SetNamespace("default")
	inst.SetName("team")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(a.Create(ctx, inst.DeepCopy())))
	}, 2*time.Minute, 200*time.Millisecond, "workspace a serves Settings once the hub fanned its CRD out")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := inst.DeepCopy()
		require.NoError(ct, a.Get(ctx, client.ObjectKeyFromObject(inst), got))
		state, _, _ := unstructured.NestedString(got.Object, "status", "state")
		assert.Equal(ct, "ACTIVE", state)
		cm := &corev1.ConfigMap{}
		require.NoError(ct, a.Get(ctx, client.ObjectKey{Namespace: "default", Name: "team-settings"}, cm))
		assert.Equal(ct, "green", cm.Data["color"])
	}, 2*time.Minute, 200*time.Millisecond)

	err := b.Get(ctx, client.ObjectKey{Namespace: "default", Name: "team-settings"}, &corev1.ConfigMap{})
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "children stay in the instance's workspace")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("kro.run/v1alpha1")
		list.SetKind("SettingsList")
		assert.NoError(ct, b.List(ctx, list), "workspace b serves the generated CRD too")
	}, 2*time.Minute, 200*time.Millisecond)
}

func clientFor(t *testing.T, k *fgtesting.KCP, ws logicalcluster.Path) client.Client {
	t.Helper()
	c, err := client.New(k.ConfigFor(ws), client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return c
}
