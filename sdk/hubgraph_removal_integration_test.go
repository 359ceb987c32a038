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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/fleetgraph/fleetgraph/sdk"
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
	opts.DisableRGDController = true
	opts.DeleteCRDsOnUnregister = true
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
// children leave both spokes), and with DeleteCRDsOnUnregister the CRD then
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
		l := startLeavingPairs(t, "released-pair", "ReleasedPair", sdk.Options{OrphanInstances: true})
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
