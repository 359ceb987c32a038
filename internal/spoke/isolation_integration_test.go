//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// activeStates lists the status.state of every instance of g in ns by name.
func activeStates(t testing.TB, c client.Client, g *graph.Graph, ns string) map[string]string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(g.Instance.GVK.GroupVersion().WithKind(g.Instance.GVK.Kind + "List"))
	require.NoError(t, c.List(context.Background(), list, client.InNamespace(ns)))
	out := map[string]string{}
	for _, u := range list.Items {
		out[u.GetName()], _, _ = unstructured.NestedString(u.Object, "status", "state")
	}
	return out
}

// timeToActive creates n instances named prefix-i in ns and returns the
// longest time one of them took from its create to being seen ACTIVE.
func timeToActive(t *testing.T, c client.Client, g *graph.Graph, ns, prefix string, n int) time.Duration {
	t.Helper()
	created := map[string]time.Time{}
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		created[name] = time.Now()
		require.NoError(t, c.Create(context.Background(), newInstance(g, ns, name, map[string]any{})))
	}
	var longest time.Duration
	require.Eventually(t, func() bool {
		now := time.Now()
		states := activeStates(t, c, g, ns)
		for name, at := range created {
			if states[name] == contract.StateActive {
				longest = max(longest, now.Sub(at))
				delete(created, name)
			}
		}
		return len(created) == 0
	}, wait, 10*time.Millisecond, "instances %s-* not all ACTIVE", prefix)
	return longest
}

// TestHungSpokeDelaysOnlyItself hangs one spoke's API server (as the hub
// sees it, through a proxy) while instances are being reconciled there, and
// measures that instances on the other spoke become ACTIVE as fast as
// before (Done-when 4 of issue 13). It measures time, so it does not run
// in parallel with other tests.
func TestHungSpokeDelaysOnlyItself(t *testing.T) {
	fleet := sharedFleet(t)
	ctx := context.Background()
	const ns = "isolated"
	g := compileAs(t, pairRGD, ns)
	healthy, hung := fleet.Spokes()[0], fleet.Spokes()[1]
	ch, cu := newClient(t, healthy.Config), newClient(t, hung.Config)
	for _, c := range []client.Client{ch, cu} {
		installCRD(t, c, g)
		createNamespace(t, c, ns)
	}
	proxy, viaProxy := fgtesting.StartProxy(t, hung.Config)
	provider := fgtesting.NewProvider()
	require.NoError(t, provider.AddConfig(ctx, ns+"-healthy", healthy.Config))
	require.NoError(t, provider.AddConfig(ctx, ns+"-hung", viaProxy))
	rt := startRuntime(t, fleet, provider, spoke.Config{})
	t.Cleanup(proxy.Resume) // before the runtime stops: cleanups run last first
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	// Warm up both spokes: watches started, first applies done.
	timeToActive(t, ch, g, ns, "warm", 1)
	timeToActive(t, cu, g, ns, "warm", 1)

	baseline := timeToActive(t, ch, g, ns, "base", 5)

	const queued = 150
	for i := range queued {
		require.NoError(t, cu.Create(ctx, newInstance(g, ns, fmt.Sprintf("q-%d", i), map[string]any{})))
	}
	eventually(t, func() (bool, string) {
		_, err := configMap(cu, ns, "q-0-left")
		return err == nil, "reconciling on the spoke to hang has not begun"
	})
	proxy.Hang()

	during := timeToActive(t, ch, g, ns, "during", 5)
	t.Logf("time to ACTIVE on the healthy spoke: %s before, %s with the other spoke hung", baseline, during)
	// A worker or lock held on the hung spoke would hold the healthy
	// spoke's instances until the call gives up (instance.DefaultCallTimeout,
	// 30 s); the bound is far under that, and over what the machine's load
	// alone adds to five instances (1.1 s under make test's load).
	assert.Less(t, during-baseline, instance.DefaultCallTimeout/6, "a hung spoke delayed instances on a healthy one")

	pending := 0
	for _, s := range activeStates(t, cu, g, ns) {
		if s != contract.StateActive {
			pending++
		}
	}
	require.Positive(t, pending, "the hang must have caught instances being reconciled")

	proxy.Resume()
	eventually(t, func() (bool, string) {
		n := 0
		for _, s := range activeStates(t, cu, g, ns) {
			if s == contract.StateActive {
				n++
			}
		}
		return n == queued+1, fmt.Sprintf("%d of %d ACTIVE after the spoke came back", n, queued+1)
	})
}
