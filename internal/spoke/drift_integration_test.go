//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

func TestResyncPutsBackDriftNoEventReported(t *testing.T) {
	t.Parallel()
	const ns = "resynced"
	g := compileAs(t, pairRGD, ns)
	cfg := sharedFleet(t).Spokes()[0].Config
	c := newClient(t, cfg)
	installCRD(t, c, g)
	createNamespace(t, c, ns)

	cl, err := cluster.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = cl.Start(ctx) })
	require.True(t, cl.GetCache().WaitForCacheSync(ctx))
	const resync = 3 * time.Second
	rt := spoke.New(spoke.Config{Options: instance.Options{Resync: resync}})
	wg.Go(func() { _ = rt.Start(ctx) })
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	require.NoError(t, rt.Engage(ctx, "", cl))

	require.NoError(t, c.Create(ctx, newInstance(g, ns, "drift", map[string]any{})))
	stateIs(t, c, g, ns, "drift", contract.StateActive)
	configMapData(t, c, ns, "drift-left", "value", "a")
	inst, err := getInstance(t, c, g, ns, "drift")
	require.NoError(t, err)

	// Blind the Runtime: removing the ConfigMap informer removes every
	// handler it registered there, so no event reports what follows.
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(configMapRef("", "").GroupVersionKind())
	require.NoError(t, cl.GetCache().RemoveInformer(ctx, meta))
	require.NoError(t, c.Patch(ctx, configMapRef(ns, "drift-left"), client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":null},"data":{"value":"drift"}}`))))

	// The period, its jitter (a fifth), and one reconcile.
	eventuallyWithin(t, resync*6/5+5*time.Second, func() (bool, string) {
		cm, err := configMap(c, ns, "drift-left")
		if err != nil {
			return false, err.Error()
		}
		value, _, _ := unstructured.NestedString(cm.Object, "data", "value")
		owner := cm.GetLabels()[contract.LabelInstanceUID]
		return value == "a" && owner == string(inst.GetUID()), fmt.Sprintf("value %q, owner label %q", value, owner)
	})
}

func TestAChildBeingDeletedIsWaitedFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "held"
	c, g, _ := servedOnOneSpoke(t, ns, pairRGD)
	require.NoError(t, c.Create(ctx, newInstance(g, ns, "held", map[string]any{})))
	stateIs(t, c, g, ns, "held", contract.StateActive)

	hold := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["test.fleetgraph.dev/hold"]}}`))
	require.NoError(t, c.Patch(ctx, configMapRef(ns, "held-left"), hold))
	require.NoError(t, c.Delete(ctx, configMapRef(ns, "held-left")))
	want := `left: resource "held/held-left" for node "left" is currently being deleted`
	readyIs(t, c, g, ns, "held", 1, "ResourceDeleting", want)
	stateIs(t, c, g, ns, "held", contract.StateInProgress)

	patchSpec(t, c, g, ns, "held", `{"spec":{"value":"b"}}`)
	readyIs(t, c, g, ns, "held", 2, "ResourceDeleting", want)
	cm, err := configMap(c, ns, "held-left")
	require.NoError(t, err)
	value, _, _ := unstructured.NestedString(cm.Object, "data", "value")
	assert.Equal(t, "a", value, "a child being deleted is not applied to")

	release := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	require.NoError(t, c.Patch(ctx, configMapRef(ns, "held-left"), release))
	configMapData(t, c, ns, "held-right", "value", "b")
	stateIs(t, c, g, ns, "held", contract.StateActive)
}

// readyIs waits until the instance's Ready condition, written for the
// given generation, has the reason and a message starting with prefix.
func readyIs(t *testing.T, c client.Client, g *graph.Graph, ns, name string, generation int64, reason, prefix string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		u, err := getInstance(t, c, g, ns, name)
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] != contract.ConditionReady {
				continue
			}
			msg, _ := m["message"].(string)
			gen, _ := m["observedGeneration"].(int64)
			return gen == generation && m["reason"] == reason && strings.HasPrefix(msg, prefix),
				fmt.Sprintf("Ready of generation %d: %v %q", gen, m["reason"], msg)
		}
		return false, "no Ready condition"
	})
}
