//go:build integration

package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// Graphs leave a pull cluster by the rules of a pushed one. A graph
// unregistered from the hub is finalized there: its instances keep the
// finalizer until deleted (their children go with them), then, with
// CRDs.DeleteOnUnregister, the CRD goes, and the hub's removal ends once
// the agent reports it done. A PullCluster deleted from the hub is a
// cluster leaving the fleet: its instances are released (finalizer off,
// children and CRD stay), then its namespace on the hub goes, and with it
// the agent's identity.
func TestGraphsLeaveAPullClusterByTheRemovalRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := fgtesting.StartFleet(t, 1) // its own: the hub serves every PullCluster on its hub cluster
	pulled := fleet.Spokes()[0]
	h, _ := startHub(t, fleet.Hub.Config, fgtesting.NewProvider(), sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, CRDs: sdk.CRDOptions{DeleteOnUnregister: true}})
	hubCfg := join(t, fleet.Hub, "edge-1", nil)
	startAgent(t, "edge-1", hubCfg, pulled)
	require.NoError(t, h.RegisterGraph(ctx, beaconRGD(t, "ember", "Ember", "1")))
	require.NoError(t, h.RegisterGraph(ctx, beaconRGD(t, "cinder", "Cinder", "1")))
	ember, cinder := gvkOf("Ember"), gvkOf("Cinder")
	createWhenServed(t, pulled.Config, instance(ember, "coal", "red"))
	createWhenServed(t, pulled.Config, instance(cinder, "ash", "grey"))
	requireState(t, pulled.Config, ember, "coal", "ACTIVE")
	requireState(t, pulled.Config, cinder, "ash", "ACTIVE")
	spokeClient := newClient(t, pulled.Config)
	hub := newClient(t, fleet.Hub.Config)

	// Unregistering ember finalizes its instance when deleted, then
	// deletes its CRD, then ends.
	require.NoError(t, h.UnregisterGraph(ctx, "ember"))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		asg := &fgv1alpha1.GraphAssignment{}
		require.NoError(ct, hub.Get(ctx, client.ObjectKey{Namespace: fgv1alpha1.PullNamespace("edge-1"), Name: "ember"}, asg))
		assert.Equal(ct, fgv1alpha1.RemovalFinalize, asg.Spec.Removal)
	}, wait, tick, "the assignment says the graph is being removed")
	assert.Contains(t, finalizersOf(t, spokeClient, ember, "coal"), spoke.Finalizer, "the instance is held until deleted")
	require.NoError(t, spokeClient.Delete(ctx, instance(ember, "coal", "")))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := configMap(spokeClient, "coal-beacon")
		assert.True(ct, apierrors.IsNotFound(err), "the deleted instance's child goes: %v", err)
		err = spokeClient.Get(ctx, client.ObjectKey{Name: "embers.kro.run"}, &apiextensionsv1.CustomResourceDefinition{})
		assert.True(ct, apierrors.IsNotFound(err), "the CRD goes once no instance is left: %v", err)
		err = hub.Get(ctx, client.ObjectKey{Namespace: fgv1alpha1.PullNamespace("edge-1"), Name: "ember"}, &fgv1alpha1.GraphAssignment{})
		assert.True(ct, apierrors.IsNotFound(err), "the removal ends and its assignment goes: %v", err)
		assert.NotContains(ct, h.Graphs(), "ember")
	}, wait, tick, "ember is removed from the pull cluster")

	// Deleting the PullCluster releases cinder's instance there.
	require.NoError(t, hub.Delete(ctx, &fgv1alpha1.PullCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge-1"}}))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		err := hub.Get(ctx, client.ObjectKey{Name: "edge-1"}, &fgv1alpha1.PullCluster{})
		assert.True(ct, apierrors.IsNotFound(err), "the PullCluster goes once cleaned up after: %v", err)
	}, wait, tick)
	assert.NotContains(t, finalizersOf(t, spokeClient, cinder, "ash"), spoke.Finalizer, "the instance is released")
	_, err := configMap(spokeClient, "ash-beacon")
	assert.NoError(t, err, "its child stays")
	assert.NoError(t, spokeClient.Get(ctx, client.ObjectKey{Name: "cinders.kro.run"}, &apiextensionsv1.CustomResourceDefinition{}), "its CRD stays")
	_, listed := clusterOf(h.FleetStatus("cinder"), "edge-1")
	assert.False(t, listed, "the cluster left the graph's fleet status")
	err = hub.Get(ctx, client.ObjectKey{Namespace: fgv1alpha1.PullNamespace("edge-1"), Name: fgv1alpha1.PullAgentName}, &corev1.ServiceAccount{})
	assert.True(t, apierrors.IsNotFound(err), "the agent's ServiceAccount is gone: %v", err)
	cs, err := kubernetes.NewForConfig(hubCfg)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		assert.True(ct, apierrors.IsUnauthorized(err), "the agent's token no longer authenticates: %v", err)
	}, wait, tick)
}

// finalizersOf reads an instance's finalizers.
func finalizersOf(t *testing.T, c client.Client, gvk schema.GroupVersionKind, name string) []string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u))
	return u.GetFinalizers()
}
