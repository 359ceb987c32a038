//go:build integration

package sdk_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	rgdctrl "github.com/fleetgraph/fleetgraph/internal/rgd"
	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A spoke whose API server stops answering turns Unreachable within the
// probe's bound, in FleetStatus and in the RGD's fleet summary, while the
// other spoke is served as before; once it answers again it is served again.
// Not parallel: its subject is the probe's bound.
func TestUnreachableSpokeIsReportedAndRecovers(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 2)
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	probe := sdk.ProberOptions{Interval: time.Second, Timeout: time.Second}
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Fleet: sdk.FleetOptions{Probe: probe}})
	require.NoError(t, h.RegisterGraph(context.Background(), rgdFromString(t, paintRGD)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"spoke-1": "Established 0/0", "spoke-2": "Established 0/0"}, clusterStates(h, "paint"))
	}, wait, tick)

	dead := fleet.Spoke("spoke-2")
	require.NoError(t, dead.Pause())
	t.Cleanup(func() { _ = dead.Resume() })
	paused := time.Now()
	// The bound is Interval+Timeout; the grace covers polling and a
	// scheduler that is slow to run the probe's goroutine.
	bound, grace := probe.Interval+probe.Timeout, 3*time.Second
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := served(h, "paint")["spoke-2"]
		assert.Equal(ct, sdk.CRDUnreachable, st.CRD)
		assert.Contains(ct, st.Message, "/readyz")
	}, bound+grace, 50*time.Millisecond)
	t.Logf("spoke-2 reported Unreachable %s after its API server stopped (bound %s)", time.Since(paused).Round(time.Millisecond), bound)
	summary := rgdctrl.Summary(h.FleetStatus("paint"))
	require.Len(t, summary.UnhealthyClusters, 1)
	assert.Equal(t, "Unreachable", summary.UnhealthyClusters[0].State)
	assert.Equal(t, "spoke-2", summary.UnhealthyClusters[0].Name)

	c1 := newClient(t, fleet.Spoke("spoke-1").Config)
	createWhenServed(t, c1, instance(paintGVK, "while-away", map[string]any{"color": "blue"}))
	requireState(t, c1, paintGVK, "while-away", "ACTIVE")
	assert.Equal(t, sdk.CRDEstablished, served(h, "paint")["spoke-1"].CRD, "the other spoke is unaffected")

	require.NoError(t, dead.Resume())
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"spoke-1": "Established 1/1", "spoke-2": "Established 0/0"}, clusterStates(h, "paint"))
	}, wait, tick)
	c2 := newClient(t, dead.Config)
	createWhenServed(t, c2, instance(paintGVK, "back", map[string]any{"color": "blue"}))
	requireState(t, c2, paintGVK, "back", "ACTIVE")
}

// A spoke whose API server froze before a graph was created is in that
// graph's status from the graph's first moment: Pending, and Unreachable
// within the prober's bound. The RGD is not Ready while the spoke has not
// served it, however well the other spoke serves. Resumed, it serves.
// Not parallel: its subject is the probe's bound.
func TestNewGraphListsAFrozenSpokeAndIsNotReadyWithoutIt(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 2)
	ctx := context.Background()
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	probe := sdk.ProberOptions{Interval: time.Second, Timeout: time.Second}
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}, Fleet: sdk.FleetOptions{Probe: probe}})
	require.Eventually(t, func() bool { return len(h.Clusters()) == 2 }, wait, tick, "both spokes engaged")
	hubClient := newClient(t, fleet.Hub.Config)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, hubClient.List(ctx, &v1alpha1.ResourceGraphDefinitionList{}))
	}, wait, tick, "the hub serves RGDs")

	frozen := fleet.Spoke("spoke-2")
	require.NoError(t, frozen.Pause())
	t.Cleanup(func() { _ = frozen.Resume() })
	paused := time.Now()
	rgd := rgdFromString(t, paintRGD)
	rgd.Generation = 0
	require.NoError(t, hubClient.Create(ctx, rgd))

	require.Eventually(t, func() bool { return slices.Contains(h.Graphs(), "paint") }, wait, 5*time.Millisecond)
	first := served(h, "paint")
	require.Contains(t, first, "spoke-2", "listed from the graph's first moment")
	assert.Contains(t, []sdk.CRDState{sdk.CRDPending, sdk.CRDUnreachable}, first["spoke-2"].CRD)

	// The bound is Interval+Timeout from the pause; the grace covers
	// polling and a slow scheduler, as in the test above.
	bound, grace := probe.Interval+probe.Timeout, 3*time.Second
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := served(h, "paint")["spoke-2"]
		assert.Equal(ct, sdk.CRDUnreachable, st.CRD)
		assert.Contains(ct, st.Message, "/readyz")
	}, time.Until(paused.Add(bound+grace)), 20*time.Millisecond)
	t.Logf("spoke-2 Unreachable in the new graph's status %s after its API server froze (bound %s)",
		time.Since(paused).Round(time.Millisecond), bound)

	// The RGD says so too once spoke-1 serves the graph, and is not Ready.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, hubClient.Get(ctx, client.ObjectKey{Name: "paint"}, got))
		f := got.Status.Fleet
		require.NotNil(ct, f)
		assert.Equal(ct, int32(2), f.Clusters)
		assert.Equal(ct, int32(1), f.Established)
		require.Len(ct, f.UnhealthyClusters, 1)
		assert.Equal(ct, "spoke-2", f.UnhealthyClusters[0].Name)
		assert.Equal(ct, "Unreachable", f.UnhealthyClusters[0].State)
	}, wait, tick)
	ready := rgdCondition(hubClient, "paint", v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status, "not Ready while a placed spoke has not served the graph")

	require.NoError(t, frozen.Resume())
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"spoke-1": "Established 0/0", "spoke-2": "Established 0/0"}, clusterStates(h, "paint"))
		ready := rgdCondition(hubClient, "paint", v1alpha1.ConditionReady)
		if assert.NotNil(ct, ready) {
			assert.Equal(ct, metav1.ConditionTrue, ready.Status)
		}
	}, wait, tick)
	c2 := newClient(t, frozen.Config)
	createWhenServed(t, c2, instance(paintGVK, "after-thaw", map[string]any{"color": "blue"}))
	requireState(t, c2, paintGVK, "after-thaw", "ACTIVE")
}

// Clusters the secret provider could not engage appear in FleetStatus with
// their reason: an unsafe kubeconfig (one that would run a program, one
// aimed at the cloud's metadata address), and a second Secret for a
// server already engaged under another name.
func TestClustersNotEngagedAppearWithTheirReason(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 2) // its own: the secret provider engages every kubeconfig Secret on its hub cluster
	ctx := context.Background()
	hubClient := newClient(t, fleet.Hub.Config)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}
	require.NoError(t, hubClient.Create(ctx, ns))

	provider := secret.New(secret.Options{Safety: secret.Safety{AllowLoopback: true}}) // the fleet is on 127.0.0.1
	h, err := sdk.NewHub(provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, err)
	mgr, err := mcmanager.New(fleet.Hub.Config, provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	require.NoError(t, provider.SetupWithManager(mgr))
	require.NoError(t, h.SetupWithManager(mgr))
	fgtesting.Start(t, mgr.Start)
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, paintRGD)))

	createKubeconfigSecret(t, hubClient, "one", fleet.Spoke("spoke-1").Kubeconfig)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"one": "Established 0/0"}, clusterStates(h, "paint"))
	}, wait, tick)

	createKubeconfigSecret(t, hubClient, "one-again", fleet.Spoke("spoke-1").Kubeconfig)
	createKubeconfigSecret(t, hubClient, "unsafe", withExecPlugin(t, fleet.Spoke("spoke-2").Kubeconfig))
	createKubeconfigSecret(t, hubClient, "metadata", withServer(t, fleet.Spoke("spoke-2").Kubeconfig, "https://169.254.169.254"))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := served(h, "paint")
		assert.Equal(ct, sdk.CRDEstablished, st["one"].CRD)
		assert.Equal(ct, sdk.CRDNotEngaged, st["one-again"].CRD)
		assert.Contains(ct, st["one-again"].Message, secret.ReasonDuplicateServer)
		assert.Contains(ct, st["one-again"].Message, `"one"`)
		assert.Equal(ct, sdk.CRDNotEngaged, st["unsafe"].CRD)
		assert.Contains(ct, st["unsafe"].Message, secret.ReasonUnsafeKubeconfig)
		assert.Equal(ct, sdk.CRDNotEngaged, st["metadata"].CRD)
		assert.Contains(ct, st["metadata"].Message, secret.ReasonUnsafeKubeconfig)
		assert.Contains(ct, st["metadata"].Message, "AllowLinkLocal")
	}, wait, tick)
	assert.Equal(t, int32(4), rgdctrl.Summary(h.FleetStatus("paint")).Clusters)

	// Its Secret gone, a cluster that never joined leaves the status.
	require.NoError(t, hubClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secret.DefaultNamespace, Name: "unsafe"}}))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NotContains(ct, served(h, "paint"), "unsafe")
	}, wait, tick)
}

func createKubeconfigSecret(t *testing.T, c client.Client, name string, kubeconfig []byte) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: secret.DefaultNamespace, Name: name,
			Labels: map[string]string{secret.DefaultSecretLabel: "true"},
		},
		Data: map[string][]byte{secret.DefaultDataKey: kubeconfig},
	}
	require.NoError(t, c.Create(context.Background(), s))
}

func withExecPlugin(t *testing.T, kubeconfig []byte) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	require.NoError(t, err)
	for _, u := range cfg.AuthInfos {
		u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/true", APIVersion: "client.authentication.k8s.io/v1"}
	}
	out, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return out
}
