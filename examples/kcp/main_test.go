//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// server is the one kcp every test of this package shares. Each test
// creates workspaces of its own names and runs a hub of its own, so they
// run in parallel.
var server *fgtesting.KCP

// kcpStart bounds kcp's start: it bootstraps its root workspace on the
// CPU, which takes ~30 s on an idle 2-core machine and minutes on a busy one.
const kcpStart = 8 * time.Minute

func TestMain(m *testing.M) {
	fgtesting.SetupLogs()
	k, err := fgtesting.NewKCP(fgtesting.KCPOptions{StartTimeout: kcpStart})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server = k
	code := m.Run()
	if err := k.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

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
	t.Parallel() // workspaces of its own; its hub shares the process with the other test's
	k := server
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
	requireTeamActive(t, a, "workspace a serves Settings once the hub fanned its CRD out")

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

// Against a real kcp server, in APIExport mode: an RGD applied in the
// provider workspace is published as an APIResourceSchema of its APIExport;
// a workspace that binds the export and accepts its ConfigMap claim serves
// Settings and gets its instance's ConfigMap, in that workspace only.
func TestHubServesKCPConsumersThroughAnAPIExport(t *testing.T) {
	t.Parallel() // workspaces of its own; its hub shares the process with the other test's
	k := server
	ctx := context.Background()
	root := logicalcluster.NewPath("root")
	for _, ws := range []string{"provider", "consumer-a", "consumer-b"} {
		_, err := k.CreateWorkspace(ctx, root, ws)
		require.NoError(t, err)
	}
	provider := root.Join("provider")
	fgtesting.Start(t, func(ctx context.Context) error { return runExport(ctx, k.Config, provider, "platform") })

	hub := clientFor(t, k, provider)
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(settingsRGD), rgd))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(hub.Create(ctx, rgd.DeepCopy())))
	}, 2*time.Minute, 200*time.Millisecond, "the hub installs the RGD CRD in the provider workspace")
	export := &unstructured.Unstructured{}
	export.SetAPIVersion("apis.kcp.io/v1alpha2")
	export.SetKind("APIExport")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, hub.Get(ctx, client.ObjectKey{Name: "platform"}, export))
		claims, _, _ := unstructured.NestedSlice(export.Object, "spec", "permissionClaims")
		assert.Len(ct, claims, 1, "the export claims ConfigMaps")
	}, 2*time.Minute, 200*time.Millisecond, "the hub publishes the graph in its APIExport")

	for _, ws := range []string{"consumer-a", "consumer-b"} {
		bindPlatform(t, clientFor(t, k, root.Join(ws)), provider)
	}
	a, b := clientFor(t, k, root.Join("consumer-a")), clientFor(t, k, root.Join("consumer-b"))
	requireTeamActive(t, a, "consumer-a serves Settings once it binds the export")
	err := b.Get(ctx, client.ObjectKey{Namespace: "default", Name: "team-settings"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "children stay in the instance's workspace: %v", err)
}

// bindPlatform binds the provider's "platform" export in the consumer's
// workspace, accepting its ConfigMap claim.
func bindPlatform(t *testing.T, consumer client.Client, provider logicalcluster.Path) {
	t.Helper()
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
		"metadata": map[string]any{"name": "platform"},
		"spec": map[string]any{
			"reference": map[string]any{"export": map[string]any{"path": provider.String(), "name": "platform"}},
			"permissionClaims": []any{map[string]any{
				"group": "", "resource": "configmaps",
				"verbs":    []any{"get", "list", "watch", "create", "update", "patch", "delete"},
				"selector": map[string]any{"matchAll": true}, "state": "Accepted",
			}},
		},
	}}
	require.NoError(t, consumer.Create(context.Background(), binding))
}

// requireTeamActive creates the Settings instance "team" (color green) once
// c serves the kind (why says what makes it served), and waits until it is
// ACTIVE with its ConfigMap next to it.
func requireTeamActive(t *testing.T, c client.Client, why string) {
	t.Helper()
	ctx := context.Background()
	inst := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"color": "green"}}}
	inst.SetAPIVersion("kro.run/v1alpha1")
	inst.SetKind("Settings")
	inst.SetNamespace("default")
	inst.SetName("team")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(c.Create(ctx, inst.DeepCopy())))
	}, 2*time.Minute, 200*time.Millisecond, why)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := inst.DeepCopy()
		require.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(inst), got))
		state, _, _ := unstructured.NestedString(got.Object, "status", "state")
		assert.Equal(ct, "ACTIVE", state)
		cm := &corev1.ConfigMap{}
		require.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "team-settings"}, cm))
		assert.Equal(ct, "green", cm.Data["color"])
	}, 2*time.Minute, 200*time.Millisecond)
}
