//go:build integration

package sdk_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// register puts an RGD in front of the hub: as an object on the hub cluster
// (RGD controller on) or through RegisterGraph (controller off).
type register func(t *testing.T, h *sdk.Hub, rgd *v1alpha1.ResourceGraphDefinition) error

// Not parallel (nor the next): a spoke removed at run time must leave no
// goroutine of the process behind, and the metrics registry is the
// process's.
func TestHubServesAFleetFromRGDObjects(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 3)
	hubClient := newClient(t, fleet.Hub.Config)
	h := runFleetScenario(t, fleet, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}}, func(t *testing.T, _ *sdk.Hub, rgd *v1alpha1.ResourceGraphDefinition) error {
		return hubClient.Create(context.Background(), rgd)
	})

	t.Run("the RGD status carries the fleet summary", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			rgd := &v1alpha1.ResourceGraphDefinition{}
			require.NoError(ct, hubClient.Get(context.Background(), client.ObjectKey{Name: "webapp"}, rgd))
			require.NotNil(ct, rgd.Status.Fleet)
			assert.Equal(ct, v1alpha1.FleetStatus{
				Clusters: 3, Established: 3, Instances: 3, ReadyInstances: 3, LatestRevision: 1,
				Revisions: []v1alpha1.RevisionClusters{{Revision: 1, Clusters: 3}}, Message: "serving revision 1 on 3 clusters",
			}, *rgd.Status.Fleet)
			assert.Equal(ct, []string{"config", "deployment"}, rgd.Status.TopologicalOrder)
			assert.Equal(ct, v1alpha1.StateActive, rgd.Status.State)
		}, wait, tick)
		for typ, reason := range map[string]string{
			v1alpha1.ConditionGraphAccepted:   "Valid",
			v1alpha1.ConditionKindReady:       "Ready",
			v1alpha1.ConditionControllerReady: "Running",
			v1alpha1.ConditionReady:           "Ready",
		} {
			c := rgdCondition(hubClient, "webapp", typ)
			require.NotNil(t, c, typ)
			assert.Equal(t, metav1.ConditionTrue, c.Status, typ)
			assert.Equal(t, reason, c.Reason, typ)
		}
	})

	t.Run("a conflict is reported on the RGD", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			rgd := &v1alpha1.ResourceGraphDefinition{}
			require.NoError(ct, hubClient.Get(context.Background(), client.ObjectKey{Name: "cache"}, rgd))
			require.NotNil(ct, rgd.Status.Fleet)
			assert.EqualValues(ct, 1, rgd.Status.Fleet.Unhealthy)
			require.Len(ct, rgd.Status.Fleet.UnhealthyClusters, 1)
			assert.Equal(ct, "spoke-3", rgd.Status.Fleet.UnhealthyClusters[0].Name)
			assert.Equal(ct, "Conflict", rgd.Status.Fleet.UnhealthyClusters[0].State)
			events := &eventsv1.EventList{}
			require.NoError(ct, hubClient.List(context.Background(), events))
			assert.True(ct, hasEvent(events, "cache", "CRDConflict"), "an event on the RGD names the conflict")
			kind := rgdCondition(hubClient, "cache", v1alpha1.ConditionKindReady)
			require.NotNil(ct, kind)
			assert.Equal(ct, metav1.ConditionFalse, kind.Status)
			ready := rgdCondition(hubClient, "cache", v1alpha1.ConditionReady)
			require.NotNil(ct, ready)
			assert.Equal(ct, metav1.ConditionFalse, ready.Status)
			assert.Equal(ct, kind.Reason, ready.Reason, "Ready carries the failing condition's reason, as in kro")
			assert.Equal(ct, v1alpha1.StateInactive, rgd.Status.State, "as in kro, Active only when Ready")
		}, wait, tick)
	})

	t.Run("an invalid RGD is not accepted and says why", func(t *testing.T) {
		require.NoError(t, hubClient.Create(context.Background(), readRGD(t, "testdata/invalid-rgd.yaml")))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			c := rgdCondition(hubClient, "broken", v1alpha1.ConditionGraphAccepted)
			require.NotNil(ct, c)
			assert.Equal(ct, metav1.ConditionFalse, c.Status)
			assert.Contains(ct, c.Message, `resource "config"`)
			assert.Contains(ct, c.Message, "${schema.spec.nmae}")
		}, wait, tick)
		assert.Empty(t, h.FleetStatus("broken").Clusters, "an invalid graph is never fanned out")
	})

	t.Run("deleting the RGD stops serving it once its instances are gone", func(t *testing.T) {
		require.NoError(t, hubClient.Delete(context.Background(), readRGD(t, "testdata/cache-rgd.yaml")))
		spoke1 := newClient(t, fleet.Spoke("spoke-1").Config)
		require.NoError(t, spoke1.Delete(context.Background(), instance(cacheGVK, "c1", nil)))
		require.Eventually(t, func() bool { return len(h.FleetStatus("cache").Clusters) == 0 }, wait, tick)
		assert.NotContains(t, h.Graphs(), "cache")
	})
}

func TestHubServesAFleetFromGo(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 3)
	h := runFleetScenario(t, fleet, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}}, func(t *testing.T, h *sdk.Hub, rgd *v1alpha1.ResourceGraphDefinition) error {
		return h.RegisterGraph(context.Background(), rgd)
	})

	t.Run("an invalid RGD is refused with the compiler's error", func(t *testing.T) {
		err := h.RegisterGraph(context.Background(), readRGD(t, "testdata/invalid-rgd.yaml"))
		var ge *graph.Error
		require.True(t, errors.As(err, &ge), "want a *graph.Error, got %v", err)
		assert.Equal(t, "config", ge.ResourceID)
		assert.Contains(t, ge.Expression, "schema.spec.nmae")
		assert.NotContains(t, h.Graphs(), "broken")
	})

	t.Run("metrics carry the cluster", func(t *testing.T) {
		families, err := metrics.Registry.Gather()
		require.NoError(t, err)
		clusters := map[string]map[string]bool{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "cluster" {
						if clusters[f.GetName()] == nil {
							clusters[f.GetName()] = map[string]bool{}
						}
						clusters[f.GetName()][l.GetValue()] = true
					}
				}
			}
		}
		for _, name := range []string{"fleetgraph_crd_fanout_duration_seconds", "fleetgraph_spoke_reconcile_duration_seconds"} {
			assert.Equal(t, map[string]bool{"spoke-1": true, "spoke-2": true, "spoke-3": true}, clusters[name],
				"%s has a series per engaged cluster, and none for the removed spoke-4", name)
		}
	})

	t.Run("the hub cluster has no RGD API and needs none", func(t *testing.T) {
		c := newClient(t, fleet.Hub.Config)
		err := c.List(context.Background(), &v1alpha1.ResourceGraphDefinitionList{})
		assert.Error(t, err)
	})
}

// runFleetScenario is the Done-when scenario shared by both ways in: three
// spokes served, a fourth added and removed at run time, and a foreign CRD
// left untouched. It returns the running Hub for more checks.
//
// The removed spoke's departure clean-up is among what must end before the
// leak check passes; it starts after scenarioDepartureGrace rather than
// DefaultDepartureGrace, which these serial tests would otherwise wait out
// twice (departure_integration_test.go tests the grace itself).
func runFleetScenario(t *testing.T, fleet *fgtesting.Fleet, opts sdk.Options, reg register) *sdk.Hub {
	ctx := context.Background()
	opts.Fleet.DepartureGrace = scenarioDepartureGrace
	spokes := map[string]client.Client{}
	for _, s := range fleet.Spokes() {
		spokes[s.Name] = newClient(t, s.Config)
	}
	foreign := fgtesting.NewCRD(cacheGVK, "caches", apiextensionsv1.NamespaceScoped) // not ours: no managed-by label
	require.NoError(t, fleet.Spoke("spoke-3").InstallCRDs(foreign))

	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, opts)
	require.NoError(t, reg(t, h, readRGD(t, "testdata/webapp-rgd.yaml")))
	require.NoError(t, reg(t, h, readRGD(t, "testdata/cache-rgd.yaml")))

	t.Run("the CRD is established on every spoke", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Equal(ct, map[string]string{
				"spoke-1": "Established 0/0", "spoke-2": "Established 0/0", "spoke-3": "Established 0/0",
			}, clusterStates(h, "webapp"))
		}, wait, tick)
	})

	t.Run("instances reconcile on their own spoke only", func(t *testing.T) {
		for name, c := range spokes {
			createWhenServed(t, c, instance(webAppGVK, "app-"+name, map[string]any{"name": "app-" + name}))
		}
		for name, c := range spokes {
			requireState(t, c, webAppGVK, "app-"+name, "ACTIVE")
			for other, oc := range spokes {
				_, err := configMapData(oc, "app-"+name+"-config")
				if other == name {
					assert.NoError(t, err, "children live in the instance's cluster")
				} else {
					assert.True(t, client.IgnoreNotFound(err) == nil && err != nil,
						"%s's children must not appear on %s", name, other)
				}
			}
		}
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Equal(ct, map[string]string{
				"spoke-1": "Established 1/1", "spoke-2": "Established 1/1", "spoke-3": "Established 1/1",
			}, clusterStates(h, "webapp"))
		}, wait, tick)
	})

	t.Run("a foreign CRD is reported and left untouched", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			st := clusterStates(h, "cache")
			assert.Equal(ct, "Established 0/0", st["spoke-1"])
			assert.Equal(ct, "Established 0/0", st["spoke-2"])
			assert.Equal(ct, "Conflict 0/0", st["spoke-3"])
		}, wait, tick)
		got := &apiextensionsv1.CustomResourceDefinition{}
		c, err := client.New(fleet.Spoke("spoke-3").Config, client.Options{Scheme: fgtesting.NewScheme()})
		require.NoError(t, err)
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: foreign.Name}, got))
		assert.Empty(t, got.Labels, "fleetgraph must not label a CRD it does not own")
		for _, mf := range got.ManagedFields {
			assert.NotEqual(t, "fleetgraph", mf.Manager, "fleetgraph must not write a CRD it does not own")
		}
		createWhenServed(t, spokes["spoke-1"], instance(cacheGVK, "c1", map[string]any{"size": int64(3)}))
		requireState(t, spokes["spoke-1"], cacheGVK, "c1", "ACTIVE")
	})

	t.Run("a spoke added at run time is served, and dropped when removed", func(t *testing.T) {
		before := goleak.IgnoreCurrent()
		s4, err := fleet.AddSpoke()
		require.NoError(t, err)
		require.NoError(t, provider.AddConfig(ctx, s4.Name, s4.Config))
		c4 := newClient(t, s4.Config)
		createWhenServed(t, c4, instance(webAppGVK, "late", map[string]any{"name": "late"}))
		requireState(t, c4, webAppGVK, "late", "ACTIVE")
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Equal(ct, "Established 1/1", clusterStates(h, "webapp")["spoke-4"])
		}, wait, tick)

		provider.Remove(s4.Name)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NotContains(ct, clusterStates(h, "webapp"), "spoke-4")
			assert.NotContains(ct, clusterStates(h, "cache"), "spoke-4")
		}, wait, tick)
		require.NoError(t, fleet.StopSpoke(s4.Name))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NoError(ct, goleak.Find(before, upstreamWatchLeak))
		}, wait, tick, "nothing started for the removed spoke may outlive it")
	})
	return h
}

// scenarioDepartureGrace is runFleetScenario's DepartureGrace.
const scenarioDepartureGrace = 2 * time.Second

// upstreamWatchLeak ignores one known upstream leak: apimachinery's
// watch.Filter (which controller-runtime's metadata-only informers use)
// loops on an unguarded channel send, so when an informer stops while an
// event is in flight that goroutine blocks forever. Nothing of ours can stop
// it; everything else must be gone.
var upstreamWatchLeak = goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop")

// upstreamHandlerLeak is controller-runtime's: a handler registered on a
// multi-namespace informer starts a goroutine that waits for every
// namespace's handler to sync, and never ends if the informer is stopped
// before it synced (multi_namespace_cache.go, v0.24.1).
var upstreamHandlerLeak = goleak.IgnoreTopFunction("sigs.k8s.io/controller-runtime/pkg/cache.newMultiNamespaceInformerHandlerRegistration.func1")

func hasEvent(events *eventsv1.EventList, regarding, reason string) bool {
	for _, e := range events.Items {
		if e.Regarding.Name == regarding && e.Reason == reason {
			return true
		}
	}
	return false
}
