//go:build integration

package kcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/providers/kcp"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var (
	settingsGVR  = schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "settings"}
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// settingsRGD is a graph of one ConfigMap; extraSpec and extraData are
// added to its schema's spec and to the ConfigMap's data.
func settingsRGD(t *testing.T, colorType, extraSpec, extraData string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	doc := `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: settings
spec:
  schema:
    apiVersion: v1alpha1
    kind: Settings
    spec:
      color: ` + colorType + `
` + extraSpec + `
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-settings
      data:
        color: ${string(schema.spec.color)}
` + extraData
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), rgd))
	return rgd
}

// The hub serves a graph through an APIExport: it publishes the schema,
// bound consumers reconcile their own instances through the virtual
// workspace, schema changes follow the CRD fan-out rules, a binding that
// refuses the claims is reported, and an unbound consumer leaves nothing
// behind.
func TestHubServesGraphsThroughAnAPIExport(t *testing.T) {
	ctx := t.Context()
	provider := createWorkspace(t, root, "settings-provider")
	one := createWorkspace(t, root, "settings-one")
	two := createWorkspace(t, root, "settings-two")
	refusing := createWorkspace(t, root, "settings-refusing")
	oneName, twoName := clusterOf(t, root, "settings-one"), clusterOf(t, root, "settings-two")
	refusingName := clusterOf(t, root, "settings-refusing")

	h := startExportHub(t, provider, "settings")
	require.NoError(t, h.RegisterGraph(ctx, settingsRGD(t, `string | default="blue"`, "", "")))

	first := requireExportLists(t, provider, "settings")
	require.True(t, strings.HasSuffix(first, ".settings.kro.run"), first)

	bind(t, one, provider, "settings", true)
	bind(t, two, provider, "settings", true)
	bind(t, refusing, provider, "settings", false)

	t.Run("two consumers serve their own instances", func(t *testing.T) {
		requireClusterState(t, h, oneName, hub.CRDEstablished, "")
		requireClusterState(t, h, twoName, hub.CRDEstablished, "")
		createSettings(t, one, "alpha", "green")
		createSettings(t, two, "beta", "red")
		requireActiveWithConfigMap(t, one, "alpha", map[string]any{"color": "green"})
		requireActiveWithConfigMap(t, two, "beta", map[string]any{"color": "red"})
		_, err := dyn(two).Resource(configMapGVR).Namespace("default").Get(ctx, "alpha-settings", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "alpha's ConfigMap is not in consumer two: %v", err)
		_, err = dyn(one).Resource(configMapGVR).Namespace("default").Get(ctx, "beta-settings", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "beta's ConfigMap is not in consumer one: %v", err)
	})

	t.Run("a binding that does not accept the claims is reported", func(t *testing.T) {
		requireClusterState(t, h, refusingName, hub.CRDIncompatible, "does not accept configmaps (core)")
	})

	t.Run("a compatible change is a new schema serving both consumers", func(t *testing.T) {
		require.NoError(t, h.RegisterGraph(ctx, settingsRGD(t, `string | default="blue"`,
			`      size: integer | default=1`, `        size: ${string(schema.spec.size)}`)))
		var second string
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			second = requireExportLists(t, provider, "settings")
			assert.NotEqual(c, first, second, "a changed schema is a new APIResourceSchema")
		}, wait, tick)
		_, err := dyn(provider).Resource(apiResourceSchemas).Get(ctx, first, metav1.GetOptions{})
		assert.NoError(t, err, "the previous schema is left in place")
		requireBoundTo(t, one, "settings", second)
		requireBoundTo(t, two, "settings", second)
		// Instances from before get the new default too, although the
		// shared cache holds them as listed before the change; new ones
		// get it from the server.
		requireActiveWithConfigMap(t, one, "alpha", map[string]any{"color": "green", "size": "1"})
		requireActiveWithConfigMap(t, two, "beta", map[string]any{"color": "red", "size": "1"})
		createSettings(t, one, "alpha-2", "green")
		createSettings(t, two, "beta-2", "red")
		requireActiveWithConfigMap(t, one, "alpha-2", map[string]any{"color": "green", "size": "1"})
		requireActiveWithConfigMap(t, two, "beta-2", map[string]any{"color": "red", "size": "1"})
	})

	t.Run("unbinding disengages the consumer without a leak", func(t *testing.T) {
		before := goleak.IgnoreCurrent()
		three := createWorkspace(t, root, "settings-three")
		threeName := clusterOf(t, root, "settings-three")
		bind(t, three, provider, "settings", true)
		requireClusterState(t, h, threeName, hub.CRDEstablished, "")
		createSettings(t, three, "delta", "blue")
		requireActiveWithConfigMap(t, three, "delta", map[string]any{"color": "blue", "size": "1"})

		require.NoError(t, dyn(three).Resource(apiBindings).Delete(ctx, "settings", metav1.DeleteOptions{}))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.NotContains(c, clusterNames(h), string(threeName))
		}, wait, tick, "consumer three leaves the fleet status")
		assert.Contains(t, clusterNames(h), string(oneName))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.NoError(c, goleak.Find(before,
				goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"),
				goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
				goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
				goleak.IgnoreTopFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
				goleak.IgnoreTopFunction("net/http.(*http2ClientConn).readLoop"),
			))
		}, wait, tick, "nothing started for consumer three outlives it")
	})
	t.Run("a breaking change is refused and the previous schema keeps serving", func(t *testing.T) {
		listed := requireExportLists(t, provider, "settings")
		require.NoError(t, h.RegisterGraph(ctx, settingsRGD(t, `integer | default=1`,
			`      size: integer | default=1`, `        size: ${string(schema.spec.size)}`)))
		requireClusterState(t, h, oneName, hub.CRDIncompatible, "keeps serving "+listed)
		assert.Equal(t, listed, requireExportLists(t, provider, "settings"))
		createSettings(t, one, "gamma", "yellow")
		requireActiveWithConfigMap(t, one, "gamma", map[string]any{"color": "yellow", "size": "1"})
	})
}

// startExportHub runs a hub in the provider workspace serving its graphs
// through the APIExport called export.
func startExportHub(t *testing.T, provider logicalcluster.Path, export string) *sdk.Hub {
	t.Helper()
	cfg := server.ConfigFor(provider)
	p, err := kcp.NewAPIExport(cfg, export, kcp.APIExportOptions{})
	require.NoError(t, err)
	mgr, err := mcmanager.New(cfg, p, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	h, err := sdk.NewHub(p, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	fgtesting.Start(t, mgr.Start)
	return h
}

// requireExportLists waits until the export lists a schema for settings
// with a claim on ConfigMaps, and returns the schema's name once it exists.
func requireExportLists(t *testing.T, provider logicalcluster.Path, export string) string {
	t.Helper()
	var name string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := dyn(provider).Resource(apiExports).Get(t.Context(), export, metav1.GetOptions{})
		if !assert.NoError(c, err) {
			return
		}
		resources, _, _ := unstructured.NestedSlice(got.Object, "spec", "resources")
		if !assert.Len(c, resources, 1) {
			return
		}
		r := resources[0].(map[string]any)
		assert.Equal(c, "kro.run", r["group"])
		assert.Equal(c, "settings", r["name"])
		name, _ = r["schema"].(string)
		claims, _, _ := unstructured.NestedSlice(got.Object, "spec", "permissionClaims")
		if assert.Len(c, claims, 1) {
			assert.Equal(c, "configmaps", claims[0].(map[string]any)["resource"])
		}
		_, err = dyn(provider).Resource(apiResourceSchemas).Get(t.Context(), name, metav1.GetOptions{})
		assert.NoError(c, err, "the listed APIResourceSchema exists")
	}, wait, tick, "APIExport %s lists the graph's schema", export)
	return name
}

// bind binds export in consumer, accepting its ConfigMap claim or not,
// and waits until the binding is bound.
func bind(t *testing.T, consumer, provider logicalcluster.Path, export string, accept bool) {
	t.Helper()
	spec := map[string]any{"reference": map[string]any{"export": map[string]any{"path": provider.String(), "name": export}}}
	if accept {
		verbs := make([]any, len(kcp.ClaimVerbs))
		for i, v := range kcp.ClaimVerbs {
			verbs[i] = v
		}
		spec["permissionClaims"] = []any{map[string]any{
			"group": "", "resource": "configmaps", "verbs": verbs,
			"selector": map[string]any{"matchAll": true}, "state": "Accepted",
		}}
	}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
		"metadata": map[string]any{"name": export}, "spec": spec,
	}}
	_, err := dyn(consumer).Resource(apiBindings).Create(t.Context(), binding, metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := dyn(consumer).Resource(apiBindings).Get(t.Context(), export, metav1.GetOptions{})
		if !assert.NoError(c, err) {
			return
		}
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		assert.Equal(c, "Bound", phase)
	}, wait, tick, "binding in %s is bound", consumer)
}

func requireClusterState(t *testing.T, h *sdk.Hub, name logicalcluster.Name, state hub.CRDState, msg string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, cs := range h.FleetStatus("settings").Clusters {
			if cs.Cluster == string(name) {
				assert.Equal(c, state, cs.CRD, cs.Message)
				assert.Contains(c, cs.Message, msg)
				return
			}
		}
		assert.Fail(c, "cluster not in the fleet status", "%s", name)
	}, wait, tick, "cluster %s is %s", name, state)
}

func clusterNames(h *sdk.Hub) []string {
	var out []string
	for _, cs := range h.FleetStatus("settings").Clusters {
		out = append(out, cs.Cluster)
	}
	return out
}

func createSettings(t *testing.T, consumer logicalcluster.Path, name, color string) {
	t.Helper()
	inst := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kro.run/v1alpha1", "kind": "Settings",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     map[string]any{"color": color},
	}}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := dyn(consumer).Resource(settingsGVR).Namespace("default").Create(context.Background(), inst, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			assert.NoError(c, err)
		}
	}, wait, tick, "%s serves Settings", consumer)
}

func requireActiveWithConfigMap(t *testing.T, consumer logicalcluster.Path, name string, data map[string]any) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := dyn(consumer).Resource(settingsGVR).Namespace("default").Get(t.Context(), name, metav1.GetOptions{})
		if !assert.NoError(c, err) {
			return
		}
		state, _, _ := unstructured.NestedString(got.Object, "status", "state")
		assert.Equal(c, "ACTIVE", state)
		cm, err := dyn(consumer).Resource(configMapGVR).Namespace("default").Get(t.Context(), name+"-settings", metav1.GetOptions{})
		if assert.NoError(c, err) {
			got, _, _ := unstructured.NestedMap(cm.Object, "data")
			assert.Equal(c, data, got)
		}
	}, wait, tick, "%s in %s is ACTIVE with its ConfigMap", name, consumer)
}

// requireBoundTo waits until consumer's binding serves schema.
func requireBoundTo(t *testing.T, consumer logicalcluster.Path, binding, schema string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := dyn(consumer).Resource(apiBindings).Get(t.Context(), binding, metav1.GetOptions{})
		if !assert.NoError(c, err) {
			return
		}
		bound, _, _ := unstructured.NestedSlice(got.Object, "status", "boundResources")
		if assert.Len(c, bound, 1) {
			name, _, _ := unstructured.NestedString(bound[0].(map[string]any), "schema", "name")
			assert.Equal(c, schema, name)
		}
	}, wait, tick, "the binding in %s serves %s", consumer, schema)
}
