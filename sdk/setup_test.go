package sdk_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// quietManager is a multicluster manager for the hub at cfg with no
// metrics or health endpoints.
func quietManager(t *testing.T, cfg *rest.Config, provider multicluster.Provider) mcmanager.Manager {
	t.Helper()
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	return mgr
}

var unreachableHub = &rest.Config{Host: "https://127.0.0.1:1"}

// A nil provider in NewHub means the manager's: the Hub serves the clusters
// the provider given to mcmanager.New engages, with no second mention of it.
func TestHubServesTheManagersProvider(t *testing.T) {
	provider := fgtesting.NewFakeProvider()
	for _, name := range []string{"a", "b"} {
		cl, err := provider.AddCluster(context.Background(), name, fgtesting.FakeClusterOptions{})
		require.NoError(t, err)
		t.Cleanup(cl.Close)
	}
	h, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Compile: sdk.CompileOptions{DisableSchemaResolver: true}})
	require.NoError(t, err)
	mgr := quietManager(t, unreachableHub, provider)
	require.NoError(t, h.SetupWithManager(mgr))
	fgtesting.Start(t, mgr.Start)

	require.NoError(t, h.RegisterGraph(context.Background(), readRGD(t, "../examples/quickstart/webapp.yaml")))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.ElementsMatch(ct, []string{"a", "b"}, clusterNames(h.FleetStatus("webapp")))
	}, fakeWait, time.Millisecond)
}

func clusterNames(st sdk.GraphStatus) []string {
	var out []string
	for _, c := range st.Clusters {
		out = append(out, c.Cluster)
	}
	return out
}

// A provider given to NewHub that the manager does not have would never be
// started by it: SetupWithManager refuses it instead of serving nobody.
func TestSetupRefusesAProviderTheManagerDoesNotHave(t *testing.T) {
	for name, managers := range map[string]multicluster.Provider{
		"another provider": fgtesting.NewFakeProvider(),
		"no provider":      nil,
	} {
		t.Run(name, func(t *testing.T) {
			h, err := sdk.NewHub(fgtesting.NewFakeProvider(), sdk.Options{Compile: sdk.CompileOptions{DisableSchemaResolver: true}})
			require.NoError(t, err)
			err = h.SetupWithManager(quietManager(t, unreachableHub, managers))
			require.ErrorIs(t, err, sdk.ErrProviderMismatch)
		})
	}
}

// The same provider in NewHub and in the manager is what the older idiom
// did; it keeps working.
func TestSetupAcceptsTheManagersOwnProvider(t *testing.T) {
	provider := fgtesting.NewFakeProvider()
	h, err := sdk.NewHub(provider, sdk.Options{Compile: sdk.CompileOptions{DisableSchemaResolver: true}})
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(quietManager(t, unreachableHub, provider)))
}

// A provider that engages nothing (a secret provider whose SetupWithManager
// was left out, say) does not leave the hub silent: it logs a warning.
func TestHubWarnsWhenItsProviderEngagesNoCluster(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	h, err := sdk.NewHub(nil, sdk.Options{Logger: logger, RGDs: sdk.RGDOptions{DisableController: true}, Compile: sdk.CompileOptions{DisableSchemaResolver: true}})
	require.NoError(t, err)
	sdk.SetNoClusterWarning(h, 10*time.Millisecond)
	mgr := quietManager(t, unreachableHub, fgtesting.NewFakeProvider())
	require.NoError(t, h.SetupWithManager(mgr))
	fgtesting.Start(t, mgr.Start)

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, "engaged no cluster") {
				return true
			}
		}
		return false
	}, fakeWait, time.Millisecond)
}

// SetupWithManager does no I/O, even with RGDs.InstallCRD: a hub cluster that
// fails every request is not contacted until the manager starts, and then
// Start ends with the install's failure.
func TestSetupDoesNoIOAndStartReportsTheInstallFailure(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "hub down", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	hubCfg := &rest.Config{Host: srv.URL}

	// The schema resolver is left on: it too must not read the hub at setup.
	h, err := sdk.NewHub(nil, sdk.Options{Logger: logr.Discard(), RGDs: sdk.RGDOptions{InstallCRD: true}})
	require.NoError(t, err)
	mgr := quietManager(t, hubCfg, fgtesting.NewFakeProvider())
	require.NoError(t, h.SetupWithManager(mgr))
	assert.Zero(t, requests.Load(), "SetupWithManager contacted the hub cluster")

	ctx, cancel := context.WithTimeout(context.Background(), fakeWait)
	defer cancel()
	err = mgr.Start(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ResourceGraphDefinition CRD")
	assert.NoError(t, ctx.Err(), "Start returned only because the test gave up")
	assert.NotZero(t, requests.Load())
}

// The manager's MaxConcurrentReconciles is the spoke workers' default; an
// explicit Options.Instances.Workers wins.
func TestSpokeWorkersFollowTheManagersControllerOptions(t *testing.T) {
	for _, tc := range []struct{ workers, want int }{{0, 3}, {5, 5}} {
		provider := fgtesting.NewFakeProvider()
		mgr, err := mcmanager.New(unreachableHub, provider, manager.Options{
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			Controller: config.Controller{MaxConcurrentReconciles: 3},
		})
		require.NoError(t, err)
		h, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Instances: spoke.Options{Workers: tc.workers}, Compile: sdk.CompileOptions{DisableSchemaResolver: true}})
		require.NoError(t, err)
		require.NoError(t, h.SetupWithManager(mgr))
		assert.Equal(t, tc.want, sdk.WorkersOf(h), "Options.Instances.Workers %d", tc.workers)
	}
}
