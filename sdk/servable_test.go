package sdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/sdk"
)

// Subscribers hear each cluster become servable, once, and stop being when
// the graph goes; WaitServable returns for a servable pair and explains a
// pair that is not.
func TestSubscribeAndWaitServableOnFakeClusters(t *testing.T) {
	h, clusters := startFakeFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), fakeWait)
	defer cancel()
	events := h.Subscribe(ctx)
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "../examples/quickstart/webapp.yaml")))

	require.NoError(t, h.WaitServable(ctx, "webapp", "a"))
	require.NoError(t, clusters["a"].GetClient().Create(ctx, fakeWebApp("first-try")))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u, err := fakeGet(clusters["a"].GetClient(), fakeWebAppGVK, "first-try")
		require.NoError(ct, err)
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		assert.Equal(ct, "ACTIVE", state)
	}, fakeWait, time.Millisecond)

	servable := map[string]sdk.ServableEvent{}
	for len(servable) < 2 {
		ev := <-events
		require.True(t, ev.Servable, "%+v", ev)
		require.NotContains(t, servable, ev.Cluster, "one event per change")
		servable[ev.Cluster] = ev
	}
	for _, name := range []string{"a", "b"} {
		// A graph registered from Go has no RGD generation.
		assert.Equal(t, sdk.ServableEvent{Graph: "webapp", Cluster: name, Servable: true}, servable[name])
	}

	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	err := h.WaitServable(short, "webapp", "nowhere")
	require.ErrorIs(t, err, sdk.ErrNotServable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "not engaged")

	require.NoError(t, h.UnregisterGraph(ctx, "webapp"))
	gone := map[string]bool{}
	for len(gone) < 2 {
		ev := <-events
		require.False(t, ev.Servable, "%+v", ev)
		gone[ev.Cluster] = true
	}
	cancel()
	for range events { // closed once ctx ends
	}
}
