package sdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

func TestAHubLivesInOneManager(t *testing.T) {
	h, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, err)
	// No API server is needed to set up; nothing here starts the manager.
	mgr, err := mcmanager.New(&rest.Config{Host: "https://127.0.0.1:1"}, nil, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	assert.ErrorIs(t, h.SetupWithManager(mgr), sdk.ErrAlreadySetUp)
}

// An RGD that does not compile leaves the graph served under its name in
// place, and the hub says nothing changed.
func TestAFailedRegistrationKeepsTheServedGraph(t *testing.T) {
	h, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, err)
	ctx := context.Background()
	good := readRGD(t, "testdata/webapp-rgd.yaml")
	require.NoError(t, h.RegisterGraph(ctx, good))

	bad := good.DeepCopy()
	bad.Spec.Resources[0].Template.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${schema.spec.nope}"}}`)
	err = h.RegisterGraph(ctx, bad)
	var ge *graph.Error
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, "config", ge.ResourceID)
	assert.Equal(t, []string{"webapp"}, h.Graphs(), "the good graph is still served")

	require.NoError(t, h.UnregisterGraph(ctx, "webapp"))
	assert.Empty(t, h.Graphs())
	require.NoError(t, h.UnregisterGraph(ctx, "webapp"), "unregistering an unknown graph is a no-op")
}

// One graph serves a kind: a second is refused, naming the first, until
// the first is removed.
func TestOneGraphPerKind(t *testing.T) {
	h, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "testdata/webapp-rgd.yaml")))

	twin := readRGD(t, "testdata/webapp-rgd.yaml")
	twin.Name = "webapp-twin"
	err = h.RegisterGraph(ctx, twin)
	require.ErrorIs(t, err, sdk.ErrKindTaken)
	assert.Contains(t, err.Error(), `"webapp"`)
	assert.Equal(t, []string{"webapp"}, h.Graphs())

	require.NoError(t, h.UnregisterGraph(ctx, "webapp"))
	require.Eventually(t, func() bool { return h.RegisterGraph(ctx, twin) == nil }, 10*time.Second, 10*time.Millisecond,
		"the kind is free once the removal is done (no cluster engaged here)")
}

// The instance options the hub sets itself are refused, not silently
// replaced; the others are the caller's.
func TestNewHubRefusesInstanceOptionsItSetsItself(t *testing.T) {
	for name, o := range map[string]spoke.Options{
		"ClusterLabels":    {ClusterLabels: func(multicluster.ClusterName) map[string]string { return nil }},
		"ClusterValues":    {ClusterValues: func(multicluster.ClusterName, string) map[string]any { return nil }},
		"LocalClusterName": {LocalClusterName: "hub"},
		"CountsChanged":    {CountsChanged: func(string) {}},
	} {
		_, err := sdk.NewHub(nil, sdk.Options{Instances: o})
		require.ErrorIs(t, err, sdk.ErrHubOwnedOption, name)
		assert.ErrorContains(t, err, "Options.Instances."+name)
	}
	_, err := sdk.NewHub(nil, sdk.Options{Instances: spoke.Options{Workers: 2, CallTimeout: time.Second, AdoptUnowned: true}})
	assert.NoError(t, err)
}
