//go:build integration

package sdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// leavingPairs is a hub graph of Pairs (one child on each of spoke-1 and
// spoke-2) served by its own hub on the shared fleet, with one ACTIVE
// instance.
type leavingPairs struct {
	*sharedHubGraph
	gvk schema.GroupVersionKind
	ns  string
}

func startLeavingPairs(t *testing.T, name, kind string, opts sdk.Options) *leavingPairs {
	t.Helper()
	opts.RGDs.DisableController = true
	opts.CRDs.DeleteOnUnregister = true
	l := &leavingPairs{sharedHubGraph: startSharedHubGraph(t, opts, nil), ns: name}
	rgd, gvk := renamedRGD(rgdFromString(t, pairRGD), name, kind)
	l.gvk = gvk
	require.NoError(t, l.h.RegisterGraph(context.Background(), rgd))
	l.createNamespace(t, l.ns)
	p := instance(l.gvk, "p0", map[string]any{"value": "v"})
	p.SetNamespace(l.ns)
	createWhenServed(t, l.hub, p)
	require.Eventually(t, func() bool { return activePairs(l.hub, l.gvk, l.ns) == 1 }, wait, tick, "the Pair is ACTIVE")
	return l
}

// crdOnHub reports whether the graph's CRD is on the hub.
func (l *leavingPairs) crdOnHub(t *testing.T) bool {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := l.hub.Get(context.Background(), client.ObjectKey{Name: crdName(l.gvk)}, crd)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

func (l *leavingPairs) pair() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(l.gvk)
	err := l.hub.Get(context.Background(), client.ObjectKey{Namespace: l.ns, Name: "p0"}, u)
	return u, err
}

func (l *leavingPairs) childExists(t require.TestingT, cluster, name string) bool {
	err := l.spokes[cluster].Get(context.Background(), client.ObjectKey{Namespace: l.ns, Name: name}, &corev1.ConfigMap{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// Unregistering a hub graph with an instance left: the removal waits for
// it (the CRD stays), the instance is still finalized when deleted (its
// children leave both spokes), and with CRDs.DeleteOnUnregister the CRD then
// leaves the hub. With OrphanInstances too, the instance is released
// instead: its children stay, and so does the CRD, which it still needs.
func TestHubGraphUnregisterWithInstancesLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("finalized, then the CRD goes", func(t *testing.T) {
		t.Parallel()
		l := startLeavingPairs(t, "leaving-pair", "LeavingPair", sdk.Options{})
		require.True(t, l.crdOnHub(t))
		require.NoError(t, l.h.UnregisterGraph(ctx, "leaving-pair"))
		assert.Never(t, func() bool { return !l.crdOnHub(t) }, 2*time.Second, tick, "the CRD left while an instance held it")
		p, err := l.pair()
		require.NoError(t, err)
		require.NoError(t, l.hub.Delete(ctx, p))
		require.Eventually(t, func() bool {
			_, err := l.pair()
			return apierrors.IsNotFound(err)
		}, wait, tick, "the instance is finalized after the unregister")
		assert.False(t, l.childExists(t, "spoke-1", "p0-left"), "spoke-1's child is deleted")
		assert.False(t, l.childExists(t, "spoke-2", "p0-right"), "spoke-2's child is deleted")
		require.Eventually(t, func() bool { return !l.crdOnHub(t) }, wait, tick, "the CRD leaves the hub")
	})
	t.Run("released, the CRD stays", func(t *testing.T) {
		t.Parallel()
		l := startLeavingPairs(t, "released-pair", "ReleasedPair", sdk.Options{RGDs: sdk.RGDOptions{OrphanInstances: true}})
		require.NoError(t, l.h.UnregisterGraph(ctx, "released-pair"))
		require.Eventually(t, func() bool {
			p, err := l.pair()
			require.NoError(t, err)
			return !controllerutil.ContainsFinalizer(p, "fleetgraph.dev/finalizer")
		}, wait, tick, "the instance is released")
		assert.Never(t, func() bool { return !l.crdOnHub(t) }, 2*time.Second, tick, "the CRD left under a released instance")
		assert.True(t, l.childExists(t, "spoke-1", "p0-left"), "a released instance's children stay")
		assert.True(t, l.childExists(t, "spoke-2", "p0-right"))
	})
}

// A deletion does not take a cluster's cache for the truth: when the
// hub's cache of spoke-2 never shows the child it applied there (as a
// cache that lags, or a cluster that froze right after the apply, would),
// the finalizer asks spoke-2 live and deletes the child, instead of
// finding nothing and leaving it there with no instance.
func TestHubGraphDeletionDoesNotTrustALaggingCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := sharedFleet(t)
	provider := fgtesting.NewProvider()
	s := &sharedHubGraph{hub: newClient(t, fleet.Hub.Config), spokes: map[string]client.Client{}}
	for _, sp := range fleet.Spokes() {
		s.spokes[sp.Name] = newClient(t, sp.Config)
		if sp.Name != "spoke-2" {
			require.NoError(t, provider.AddConfig(ctx, sp.Name, sp.Config))
			continue
		}
		cl, err := cluster.New(rest.CopyConfig(sp.Config), func(o *cluster.Options) { o.NewCache = blindToConfigMaps })
		require.NoError(t, err)
		require.NoError(t, provider.Add(ctx, sp.Name, cl))
	}
	s.h = startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	rgd, gvk := renamedRGD(rgdFromString(t, pairRGD), "blind-pair", "BlindPair")
	require.NoError(t, s.h.RegisterGraph(ctx, rgd))
	ns := "blind-pairs"
	s.createNamespace(t, ns)
	p := instance(gvk, "p0", map[string]any{"value": "v"})
	p.SetNamespace(ns)
	createWhenServed(t, s.hub, p)
	require.Eventually(t, func() bool { return activePairs(s.hub, gvk, ns) == 1 }, wait, tick, "the Pair is ACTIVE")
	require.NoError(t, s.spokes["spoke-2"].Get(ctx, client.ObjectKey{Namespace: ns, Name: "p0-right"}, &corev1.ConfigMap{}))

	require.NoError(t, s.hub.Delete(ctx, p))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(s.hub.Get(ctx, client.ObjectKeyFromObject(p), p.DeepCopy()))
	}, wait, tick, "the Pair is deleted")
	for cluster, name := range map[string]string{"spoke-1": "p0-left", "spoke-2": "p0-right"} {
		err := s.spokes[cluster].Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
		assert.True(t, apierrors.IsNotFound(err), "%s's child %s is deleted with its instance, not left behind (%v)", cluster, name, err)
	}
}

// blindToConfigMaps makes a cache whose lists of ConfigMaps' metadata
// are always empty: a cache that never shows the ConfigMaps written.
func blindToConfigMaps(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return blindCache{Cache: c}, nil
}

type blindCache struct{ cache.Cache }

func (c blindCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if m, ok := list.(*metav1.PartialObjectMetadataList); ok && m.GroupVersionKind().Kind == "ConfigMapList" {
		if err := c.Cache.List(ctx, list, opts...); err != nil {
			return err
		}
		m.Items = nil
		return nil
	}
	return c.Cache.List(ctx, list, opts...)
}
