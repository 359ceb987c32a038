//go:build integration

package sdk_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var rgdKind = v1alpha1.GroupVersion.WithKind("ResourceGraphDefinition")

// A Hub never adds types to a scheme it did not make (issue 25). Two hubs
// run their RGD controllers in one process on one hub cluster, each
// claiming the RGDs of its own label: one by Run, one embedded in a manager
// given no scheme, whose scheme is client-go's process-wide one. Both serve
// their RGD, and client-go's scheme still does not know the RGD kind.
// SetupWithManager used to register it there, racing with the other
// manager decoding through that scheme.
//
// Parallel although it reads process-wide state: no test of the package
// writes client-go's scheme (TestMain no longer does).
func TestHubsLeaveClientGosSchemeAlone(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1) // its own: the RGD controllers claim RGDs on its hub cluster
	ctx := context.Background()

	byRun, err := sdk.NewHub(mustProvider(t, fleet), sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true, Selector: hubLabel("run")}})
	require.NoError(t, err)
	fgtesting.StartStoppable(t, func(ctx context.Context) error { return byRun.Run(ctx, fleet.Hub.Config) })

	provider := mustProvider(t, fleet)
	mgr, err := mcmanager.New(fleet.Hub.Config, provider, manager.Options{ // no Scheme: client-go's
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	require.Same(t, clientgoscheme.Scheme, mgr.GetLocalManager().GetScheme())
	embedded, err := sdk.NewHub(provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true, Selector: hubLabel("embedded")}})
	require.NoError(t, err)
	require.NoError(t, embedded.SetupWithManager(mgr))
	fgtesting.StartStoppable(t, mgr.Start)

	hubClient := newClient(t, fleet.Hub.Config)
	for name, h := range map[string]*sdk.Hub{"run": byRun, "embedded": embedded} {
		rgd := noteRGD(t, "scheme-"+name, "Scheme"+name+"Note")
		rgd.Labels = map[string]string{"fleetgraph.dev/hub": name}
		require.EventuallyWithT(t, func(ct *assert.CollectT) { // the CRD is installed as the hubs start
			assert.NoError(ct, hubClient.Create(ctx, rgd.DeepCopy()))
		}, wait, tick)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			got := &v1alpha1.ResourceGraphDefinition{}
			require.NoError(ct, hubClient.Get(ctx, client.ObjectKeyFromObject(rgd), got))
			assert.Equal(ct, v1alpha1.StateActive, got.Status.State)
			assert.Contains(ct, h.Graphs(), rgd.Name, "served by the hub whose label it carries")
		}, wait, tick, "hub %q serves its RGD", name)
	}
	assert.False(t, clientgoscheme.Scheme.Recognizes(rgdKind), "a Hub added the RGD types to client-go's scheme")
}

// An embedder's scheme that lacks the RGD types is not written either: the
// RGD controller then reads RGDs through a client of its own (the hubs
// startStoppableHub starts, with a scheme of client-go's types only, run
// it).
func TestSetupWithManagerLeavesTheEmbeddersSchemeAlone(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	// No API server is needed: neither NewHub, SetupWithManager nor
	// mcmanager.New does I/O.
	mgr, err := mcmanager.New(unreachableHub, nil, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	h, err := sdk.NewHub(nil, sdk.Options{})
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	assert.False(t, scheme.Recognizes(rgdKind), "SetupWithManager added the RGD types to the embedder's scheme")
}

func mustProvider(t *testing.T, fleet *fgtesting.Fleet) *fgtesting.Provider {
	t.Helper()
	p, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	return p
}

func hubLabel(name string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{"fleetgraph.dev/hub": name})
}
