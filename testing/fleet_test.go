//go:build integration

package testing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var widgetGVK = schema.GroupVersionKind{Group: "test.fleetgraph.dev", Version: "v1", Kind: "Widget"}

func widget(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVK)
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

// The fleet's clusters are separate API servers, and a spoke removed from
// the provider at run time stops feeding a controller engaged through
// mcmanager while the other spoke keeps feeding it.
func TestFleetSpokesAreIsolatedAndRemovable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	start := time.Now()
	fleet := fgtesting.StartFleet(t, 2)
	t.Logf("hub and 2 spokes started in %s", time.Since(start).Round(time.Millisecond))
	spokes := fleet.Spokes()
	require.Len(t, spokes, 2)
	assert.Equal(t, []string{"spoke-1", "spoke-2"}, []string{spokes[0].Name, spokes[1].Name})

	clients := map[string]client.Client{}
	for _, s := range spokes {
		require.NoError(t, s.InstallCRDs(fgtesting.NewCRD(widgetGVK, "widgets", apiextensionsv1.NamespaceScoped)))
		c, err := client.New(s.Config, client.Options{})
		require.NoError(t, err)
		require.NoError(t, c.Create(ctx, widget("from-"+s.Name)))
		clients[s.Name] = c
	}

	for name, c := range clients {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(widgetGVK.GroupVersion().WithKind("WidgetList"))
		require.NoError(t, c.List(ctx, list))
		require.Len(t, list.Items, 1, "spoke %s must hold only its own widget", name)
		assert.Equal(t, "from-"+name, list.Items[0].GetName())
	}
	hub, err := client.New(fleet.Hub.Config, client.Options{})
	require.NoError(t, err)
	assert.Error(t, hub.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": widgetGVK.GroupVersion().String(), "kind": "WidgetList"}}),
		"the hub never had the spokes' CRD installed")

	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	s, done, err := startWatchManager(ctx, fleet.Hub.Config, provider, widget(""))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return s.has("spoke-1/default/from-spoke-1") && s.has("spoke-2/default/from-spoke-2")
	}, 60*time.Second, 50*time.Millisecond, "both spokes are engaged and watched")

	provider.Remove("spoke-2")
	ctx2 := s.engagement("spoke-2")
	require.Eventually(t, func() bool { return ctx2.Err() != nil }, 30*time.Second, 20*time.Millisecond,
		"removal cancels the spoke's engagement")

	require.NoError(t, clients["spoke-2"].Create(ctx, widget("after-removal")))
	require.NoError(t, clients["spoke-1"].Create(ctx, widget("still-watched")))
	require.Eventually(t, func() bool { return s.has("spoke-1/default/still-watched") }, 30*time.Second, 20*time.Millisecond)
	assert.False(t, s.has("spoke-2/default/after-removal"), "a removed spoke's events must not reach the controller")

	cancel()
	require.NoError(t, <-done)
}
