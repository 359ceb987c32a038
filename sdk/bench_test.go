//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/hub"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// BenchmarkCRDFanOut measures, in one run against one fleet, how long a new
// graph takes from RegisterGraph until its CRD is established on every
// spoke: with 1 spoke and with 3. Fan-out runs per spoke in parallel, so 3
// spokes should cost little more than 1 (target: at most 1.3x).
//
// For scale it also measures the floor: creating a CRD directly and waiting
// for Established, on 1 spoke and on 3 at once. On a 2-core machine the
// three API servers compete for CPU while they establish a CRD, so the
// floor's own ratio is well above 1.
func BenchmarkCRDFanOut(b *testing.B) {
	fleet := fgtesting.StartFleet(b, 3)
	ctx := context.Background()
	one := fgtesting.NewProvider()
	s1 := fleet.Spoke("spoke-1")
	require.NoError(b, one.AddConfig(ctx, s1.Name, s1.Config))
	all, err := fleet.NewProvider(ctx)
	require.NoError(b, err)
	hubs := map[int]*sdk.Hub{
		1: startHub(b, fleet.Hub.Config, one, sdk.Options{DisableRGDController: true}),
		3: startHub(b, fleet.Hub.Config, all, sdk.Options{DisableRGDController: true}),
	}

	spokes := fleet.Spokes()
	total, floor := map[int]time.Duration{}, map[int]time.Duration{}
	for i := 0; b.Loop(); i++ {
		for _, n := range []int{1, 3} {
			total[n] += registerAndWait(b, hubs[n], fmt.Sprintf("Bench%dOn%d", i, n), n)
			floor[n] += createAndWait(b, spokes[:n], fmt.Sprintf("Floor%dOn%d", i, n))
		}
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(ms(total[1]), "ms/1-spoke")
	b.ReportMetric(ms(total[3]), "ms/3-spokes")
	b.ReportMetric(ms(total[3])/ms(total[1]), "ratio")
	b.ReportMetric(ms(floor[3])/ms(floor[1]), "floor-ratio")
	fmt.Printf("CRD established via fleetgraph: 1 spoke %.0f ms, 3 spokes %.0f ms; 3-spokes/1-spoke ratio: %.2fx (%d graphs each)\n",
		ms(total[1]), ms(total[3]), ms(total[3])/ms(total[1]), b.N)
	fmt.Printf("floor (direct create + wait): 1 spoke %.0f ms, 3 spokes %.0f ms; ratio: %.2fx\n",
		ms(floor[1]), ms(floor[3]), ms(floor[3])/ms(floor[1]))
}

// createAndWait creates a CRD of the given kind directly on each cluster at
// once and returns the time until it is established on all of them.
func createAndWait(b *testing.B, clusters []*fgtesting.Cluster, kind string) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for _, cl := range clusters {
		wg.Go(func() {
			c, err := client.New(cl.Config, client.Options{})
			if !assert.NoError(b, err) {
				return
			}
			crd := widgetCRD()
			plural := strings.ToLower(kind) + "s"
			crd.Name = plural + "." + crd.Spec.Group
			crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"}
			u, err := hub.ApplyObject(crd)
			if assert.NoError(b, err) && assert.NoError(b, c.Create(context.Background(), u)) {
				assert.NoError(b, hub.WaitEstablished(context.Background(), c, crd.Name))
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// registerAndWait registers a one-ConfigMap graph of the given kind and
// returns the time until its CRD is established on n clusters.
func registerAndWait(b *testing.B, h *sdk.Hub, kind string, n int) time.Duration {
	rgd := oneConfigMapRGD(b, kind)
	start := time.Now()
	require.NoError(b, h.RegisterGraph(context.Background(), rgd))
	for {
		est := 0
		for _, c := range h.FleetStatus(rgd.Name).Clusters {
			if c.CRD.Healthy() {
				est++
			}
		}
		if est == n {
			return time.Since(start)
		}
		require.Less(b, time.Since(start), wait, "graph %s not established on %d spokes", kind, n)
		time.Sleep(2 * time.Millisecond) // measurement granularity, not synchronisation
	}
}
