//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	relabelInstances = 100
	relabelPoll      = 100 * time.Millisecond
)

// BenchmarkRelabel100 measures what a relabel costs: 100 instances of a
// graph whose ConfigMap holds cluster.labels.tier, on one cluster; each
// iteration changes the tier and waits until every ConfigMap holds it.
// The floor is writing the same 100 ConfigMaps directly with server-side
// apply, 8 at a time, on the same API server. The labels are polled every
// 100ms here (2s by default), so half a poll of each figure is waiting.
func BenchmarkRelabel100(b *testing.B) {
	cl, err := fgtesting.StartCluster("relabel", fgtesting.ClusterOptions{})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, cl.Stop()) })
	c, err := client.New(cl.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(b, err)
	g := relabelGraph(b)
	benchInstallCRD(b, c, g.CRD)

	var requests atomic.Int64
	mgr, err := manager.New(countedConfig(cl.Config, &requests), manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(b, err)
	labels := &labelSource{labels: map[string]string{"tier": "t0"}}
	rt := spoke.New(spoke.Options{ClusterLabels: labels.get, ClusterLabelsPoll: relabelPoll})
	require.NoError(b, rt.SetupWithManager(mgr))
	require.NoError(b, rt.Serve(spoke.Version{Graph: g, Revision: 1}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	b.Cleanup(func() { cancel(); require.NoError(b, <-done) })

	for i := range relabelInstances {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": "x"}}}
		u.SetGroupVersionKind(g.Instance.GVK)
		u.SetNamespace("default")
		u.SetName(fmt.Sprintf("r%03d", i))
		require.NoError(b, c.Create(ctx, u))
	}
	waitAllHold(b, c, "t0")
	floor := applyFloor(b, c, "floor")

	var relabel time.Duration
	before := requests.Load()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tier := fmt.Sprintf("t%d", i+1)
		start := time.Now()
		labels.set(map[string]string{"tier": tier})
		waitAllHold(b, c, tier)
		relabel += time.Since(start)
	}
	b.StopTimer()
	per := relabel / time.Duration(b.N)
	b.ReportMetric(float64(per.Milliseconds()), "ms/relabel")
	b.ReportMetric(float64(floor.Milliseconds()), "floor-ms")
	b.ReportMetric(float64(per)/float64(floor), "x-floor")
	b.ReportMetric(float64(requests.Load()-before)/float64(b.N*relabelInstances), "req/instance")
}

func relabelGraph(b *testing.B) *graph.Graph {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(b, yaml.UnmarshalStrict([]byte(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: relabel}
spec:
  schema: {apiVersion: v1alpha1, kind: Relabel, spec: {name: string}}
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: '${schema.metadata.name + "-config"}'}
      data: {value: '${cluster.labels.?tier.orValue("none")}'}
`), rgd))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(b, err)
	return g
}

// waitAllHold waits until every instance's ConfigMap holds value.
func waitAllHold(b *testing.B, c client.Client, value string) {
	b.Helper()
	require.Eventually(b, func() bool {
		list := &corev1.ConfigMapList{}
		if err := c.List(context.Background(), list, client.InNamespace("default")); err != nil {
			return false
		}
		n := 0
		for _, cm := range list.Items {
			if cm.Data["value"] == value && len(cm.Name) == len("r000-config") {
				n++
			}
		}
		return n == relabelInstances
	}, wait, 10*time.Millisecond)
}

// applyFloor writes 100 ConfigMaps with server-side apply, 8 at a time,
// and returns how long that took.
func applyFloor(b *testing.B, c client.Client, value string) time.Duration {
	b.Helper()
	start := time.Now()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range relabelInstances {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("floor%03d", i), "namespace": "default"},
				"data":     map[string]any{"value": value},
			}}
			require.NoError(b, c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("floor"), client.ForceOwnership))
		})
	}
	wg.Wait()
	return time.Since(start)
}

func benchInstallCRD(b *testing.B, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	b.Helper()
	require.NoError(b, c.Create(context.Background(), crd.DeepCopy()))
	require.Eventually(b, func() bool {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if c.Get(context.Background(), client.ObjectKeyFromObject(crd), got) != nil {
			return false
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	}, wait, tick)
}

type countingRoundTripper struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// countedConfig counts the requests of clients made from cfg.
func countedConfig(cfg *rest.Config, n *atomic.Int64) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingRoundTripper{next: rt, n: n} }
	return cfg
}
