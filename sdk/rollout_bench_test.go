//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// BenchmarkRolloutOneWave measures, in one run against one fleet of 4
// spokes, how long a new revision of a served graph takes from
// RegisterGraph until every spoke serves it: through a GraphRollout with a
// single wave, and through a hub without rollouts (the unconditional
// fan-out). Target: the rollout costs at most 1.2x the fan-out.
func BenchmarkRolloutOneWave(b *testing.B) {
	fleet := fgtesting.StartFleet(b, 4)
	ctx := context.Background()
	flatProvider, err := fleet.NewProvider(ctx)
	require.NoError(b, err)
	rollProvider, err := fleet.NewProvider(ctx)
	require.NoError(b, err)
	flat := startHub(b, fleet.Hub.Config, flatProvider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Disable: true}})
	roll := startHub(b, fleet.Hub.Config, rollProvider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})

	var total = map[string]time.Duration{}
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		names := map[string]string{"flat": fmt.Sprintf("flat%d", i), "roll": fmt.Sprintf("roll%d", i)}
		applyRollout(b, fleet.Hub.Config, names["roll"], map[string]any{"graph": names["roll"]})
		for key, h := range map[string]*sdk.Hub{"flat": flat, "roll": roll} {
			require.NoError(b, h.RegisterGraph(ctx, benchRGD(b, names[key], 1)))
			waitServed(b, h, names[key], 1)
		}
		waitRolledOut(b, roll, names["roll"], 1)
		b.StartTimer()
		// Alternate which goes first, so neither always has the idle CPU.
		order := []string{"flat", "roll"}
		if i%2 == 1 {
			order = []string{"roll", "flat"}
		}
		for _, key := range order {
			h := map[string]*sdk.Hub{"flat": flat, "roll": roll}[key]
			start := time.Now()
			require.NoError(b, h.RegisterGraph(ctx, benchRGD(b, names[key], 2)))
			waitServed(b, h, names[key], 2)
			total[key] += time.Since(start)
		}
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(ms(total["flat"]), "ms/fan-out")
	b.ReportMetric(ms(total["roll"]), "ms/one-wave")
	b.ReportMetric(ms(total["roll"])/ms(total["flat"]), "ratio")
	fmt.Printf("new revision serving on 4 spokes: unconditional fan-out %.0f ms, one-wave rollout %.0f ms; ratio %.2fx (%d revisions each)\n",
		ms(total["flat"]), ms(total["roll"]), ms(total["roll"])/ms(total["flat"]), b.N)
}

// benchRGD is a one-ConfigMap graph named name, of kind Name; generation
// gen writes gen in its data.
func benchRGD(b *testing.B, name string, gen int64) *v1alpha1.ResourceGraphDefinition {
	rgd := configMapRGD(b, name, strings.ToUpper(name[:1])+name[1:], gen)
	rgd.Generation = gen
	return rgd
}

// configMapRGD is a graph named name, of the given kind, with one
// ConfigMap that records gen (so that each generation changes the child).
func configMapRGD(t testing.TB, name, kind string, gen int64) *v1alpha1.ResourceGraphDefinition {
	return rgdFromString(t, fmt.Sprintf(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: %[1]s
spec:
  schema:
    apiVersion: v1alpha1
    kind: %[2]s
    spec:
      size: integer | default=1
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}
      data:
        size: ${string(schema.spec.size)}
        generation: "%[3]d"
`, name, kind, gen))
}

// waitServed polls until every spoke serves generation gen of the graph.
func waitServed(b *testing.B, h *sdk.Hub, graphName string, gen int64) {
	start := time.Now()
	for {
		n := 0
		for _, c := range h.FleetStatus(graphName).Clusters {
			if c.Serving && c.ServedGeneration == gen {
				n++
			}
		}
		if n == 4 {
			return
		}
		require.Less(b, time.Since(start), wait, "graph %s generation %d not served on 4 spokes", graphName, gen)
		time.Sleep(2 * time.Millisecond) // measurement granularity, not synchronisation
	}
}

func waitRolledOut(b *testing.B, h *sdk.Hub, graphName string, rev int64) {
	start := time.Now()
	for {
		if st, ok := h.Rollout(graphName); ok && st.Phase == fgv1alpha1.RolloutComplete && st.TargetRevision == rev {
			return
		}
		require.Less(b, time.Since(start), wait, "rollout of %s not complete at revision %d", graphName, rev)
		time.Sleep(10 * time.Millisecond)
	}
}
