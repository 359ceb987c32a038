//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// restartInstances is the size: enough that a hub stopped half-way
// leaves instances in every stage.
const restartInstances = 300

// A hub stopped while instances are half-way, and another started in its
// place, leaves every instance ACTIVE with exactly its children: none
// duplicated, none orphaned. Deleting them all then leaves nothing behind.
func TestHubRestartHalfWayLosesAndDuplicatesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := fgtesting.StartFleet(t, 1) // its own: 300 instances and their children would slow a shared spoke for every test
	c := newClient(t, fleet.Spoke("spoke-1").Config)
	gvk := schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "WebApp"}
	opts := sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}}

	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h, stop := startStoppableHub(t, fleet.Hub.Config, provider, opts)
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "testdata/webapp-rgd.yaml")))
	createWhenServed(t, c, instance(gvk, "app-0", map[string]any{"name": "app-0"}))
	createInstances(t, c, gvk, 1, restartInstances/2)
	require.Eventually(t, func() bool { return countActive(t, c, gvk) >= restartInstances/8 }, wait, tick)
	stop() // half-way: some ACTIVE, some applied in part, some not seen yet
	t.Logf("hub stopped with %d of %d instances ACTIVE", countActive(t, c, gvk), restartInstances/2)

	createInstances(t, c, gvk, restartInstances/2, restartInstances) // while no hub runs
	provider2, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h2, _ := startStoppableHub(t, fleet.Hub.Config, provider2, opts)
	require.NoError(t, h2.RegisterGraph(ctx, readRGD(t, "testdata/webapp-rgd.yaml")))

	require.Eventually(t, func() bool { return countActive(t, c, gvk) == restartInstances }, 3*wait, tick)
	requireExactChildren(t, c, gvk, restartInstances)

	require.NoError(t, c.DeleteAllOf(ctx, instance(gvk, "", nil), client.InNamespace("default")))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		require.NoError(ct, c.List(ctx, list, client.InNamespace("default")))
		assert.Empty(ct, list.Items, "instances left")
		assert.Zero(ct, len(ourChildren(ct, c)), "children left")
	}, 3*wait, tick)
}

// createInstances creates app-from … app-(to-1), several at a time.
func createInstances(t *testing.T, c client.Client, gvk schema.GroupVersionKind, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, to-from)
	for w := range 8 {
		wg.Go(func() {
			for i := from + w; i < to; i += 8 {
				name := fmt.Sprintf("app-%d", i)
				if err := c.Create(context.Background(), instance(gvk, name, map[string]any{"name": name})); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func countActive(t *testing.T, c client.Client, gvk schema.GroupVersionKind) int {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	require.NoError(t, c.List(context.Background(), list, client.InNamespace("default")))
	n := 0
	for _, item := range list.Items {
		if s, _, _ := unstructured.NestedString(item.Object, "status", "state"); s == "ACTIVE" {
			n++
		}
	}
	return n
}

// requireExactChildren checks that every instance has exactly its
// ConfigMap and Deployment, each labelled for it, and nothing else is
// labelled as ours.
func requireExactChildren(t *testing.T, c client.Client, gvk schema.GroupVersionKind, n int) {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	require.NoError(t, c.List(context.Background(), list, client.InNamespace("default")))
	uids := map[string]string{}
	for _, item := range list.Items {
		uids[string(item.GetUID())] = item.GetName()
	}
	require.Len(t, uids, n)
	perInstance := map[string][]string{}
	for _, child := range ourChildren(t, c) {
		owner, ok := uids[child.GetLabels()[contract.LabelInstanceUID]]
		kind := child.GetObjectKind().GroupVersionKind().Kind
		require.True(t, ok, "%s %s is labelled for an instance that does not exist (an orphan)", kind, child.GetName())
		perInstance[owner] = append(perInstance[owner], kind+"/"+child.GetName())
	}
	for _, name := range uids {
		assert.ElementsMatch(t, []string{"ConfigMap/" + name + "-config", "Deployment/" + name}, perInstance[name], "children of %s", name)
	}
}

// ourChildren lists the ConfigMaps and Deployments labelled as children.
func ourChildren(t require.TestingT, c client.Client) []client.Object {
	var out []client.Object
	cms := &corev1.ConfigMapList{}
	require.NoError(t, c.List(context.Background(), cms, client.HasLabels{contract.LabelInstanceUID}))
	for i := range cms.Items {
		cms.Items[i].Kind = "ConfigMap"
		out = append(out, &cms.Items[i])
	}
	deps := &appsv1.DeploymentList{}
	require.NoError(t, c.List(context.Background(), deps, client.HasLabels{contract.LabelInstanceUID}))
	for i := range deps.Items {
		deps.Items[i].Kind = "Deployment"
		out = append(out, &deps.Items[i])
	}
	return out
}
