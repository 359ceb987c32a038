//go:build integration

package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// hostileSchemaRGD is an RGD of kind kind whose spec.schema has the given
// spec, types and extra fields, and one ConfigMap.
func hostileSchemaRGD(t *testing.T, name, kind string, spec, types, extra map[string]any) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	schema := map[string]any{"apiVersion": "v1alpha1", "group": "hostile.fleetgraph.dev", "kind": kind, "spec": spec}
	if types != nil {
		schema["types"] = types
	}
	for k, v := range extra {
		schema[k] = v
	}
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"schema": schema, "resources": []any{map[string]any{"id": "note", "template": map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "${schema.metadata.name}-" + name},
		}}}},
	})
	require.NoError(t, err)
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, json.Unmarshal(raw, rgd))
	return rgd
}

// hostileRGDs are RGDs a hostile tenant could store, each of a few KB
// (the printer columns one about 1.2 MB), and the Limits field that
// refuses each.
func hostileRGDs(t *testing.T) map[string]struct {
	rgd   *v1alpha1.ResourceGraphDefinition
	limit string
} {
	doubling := map[string]any{"T0": "string"}
	for i := 1; i < 40; i++ {
		prev := fmt.Sprintf("T%d", i-1)
		doubling[fmt.Sprintf("T%d", i)] = map[string]any{"a": prev, "b": prev}
	}
	// One long description, copied at every use of its type.
	described := map[string]any{}
	for i := range 300 {
		described[fmt.Sprintf("f%d", i)] = "Described"
	}
	columns := make([]any, 0, 500)
	for i := range 500 {
		columns = append(columns, map[string]any{"name": fmt.Sprintf("c%d", i), "type": "string", "jsonPath": ".spec.a",
			"description": strings.Repeat("d", 2200)})
	}
	return map[string]struct {
		rgd   *v1alpha1.ResourceGraphDefinition
		limit string
	}{
		"doubling": {
			rgd:   hostileSchemaRGD(t, "doubling", "Doubling", map[string]any{"root": "T39"}, doubling, nil),
			limit: "over the limit of 10000 (Limits.MaxSchemaProperties)",
		},
		"described": {
			rgd: hostileSchemaRGD(t, "described", "Described", described,
				map[string]any{"Described": `string | description="` + strings.Repeat("x", 4000) + `"`}, nil),
			limit: "over the limit of 1048576 (Limits.MaxCRDBytes)",
		},
		"columns": {
			rgd: hostileSchemaRGD(t, "columns", "Columns", map[string]any{"a": "string"}, nil,
				map[string]any{"additionalPrinterColumns": columns}),
			limit: "over the limit of 1048576 (Limits.MaxCRDBytes)",
		},
	}
}

// A hub restarted with hostile RGDs already stored comes up and serves
// everything else: a benign RGD stays Ready and its instances become
// ACTIVE, while each hostile RGD is refused at once, with a condition and
// an event naming the limit it passed, and compiled once.
func TestARestartedHubWithHostileRGDsServesTheRest(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1) // its own: the RGD controller claims every RGD on its hub cluster
	ctx := context.Background()
	hubClient := newClient(t, fleet.Hub.Config)
	spokeClient := newClient(t, fleet.Spoke("spoke-1").Config)
	opts := sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}}

	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	_, stop := startStoppableHub(t, fleet.Hub.Config, provider, opts)
	require.NoError(t, hubClient.Create(ctx, noteRGD(t, "benign", "BenignNote")))
	createWhenServed(t, spokeClient, instance(noteGVK("BenignNote"), "before", map[string]any{}))
	requireState(t, spokeClient, noteGVK("BenignNote"), "before", "ACTIVE")
	stop()

	hostile := hostileRGDs(t)
	for _, h := range hostile {
		require.NoError(t, hubClient.Create(ctx, h.rgd))
	}
	provider2, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h2, _ := startStoppableHub(t, fleet.Hub.Config, provider2, opts)

	createWhenServed(t, spokeClient, instance(noteGVK("BenignNote"), "after", map[string]any{}))
	requireState(t, spokeClient, noteGVK("BenignNote"), "after", "ACTIVE")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ready := rgdCondition(hubClient, "benign", v1alpha1.ConditionReady)
		require.NotNil(ct, ready)
		assert.Equal(ct, metav1.ConditionTrue, ready.Status, "%s: %s", ready.Reason, ready.Message)
	}, wait, tick, "the benign RGD is Ready")

	for name, h := range hostile {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			accepted := rgdCondition(hubClient, name, v1alpha1.ConditionGraphAccepted)
			require.NotNil(ct, accepted)
			assert.Equal(ct, metav1.ConditionFalse, accepted.Status)
			assert.Contains(ct, accepted.Message, h.limit)
			events := &eventsv1.EventList{}
			require.NoError(ct, hubClient.List(ctx, events))
			assert.True(ct, hasEventWith(events, name, "GraphRejected", h.limit), "an event on RGD %s names the limit", name)
		}, wait, tick, "RGD %s is refused naming its limit", name)
		assert.Empty(t, h2.FleetStatus(name).Clusters, "RGD %s is never fanned out", name)
	}
	assert.ElementsMatch(t, []string{"benign"}, h2.Graphs())
	runs, reused := sdk.CompileCounts(h2)
	assert.Equal(t, int64(1+len(hostile)), runs, "each RGD compiled once (%d results reused)", reused)
}

func hasEventWith(events *eventsv1.EventList, regarding, reason, note string) bool {
	for _, e := range events.Items {
		if e.Regarding.Name == regarding && e.Reason == reason && strings.Contains(e.Note, note) {
			return true
		}
	}
	return false
}
