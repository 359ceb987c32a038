//go:build integration

package spoke_test

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// clusterRGD is a graph with one ConfigMap whose value is expr.
func clusterRGD(t *testing.T, name, kind, expr string) *graph.Graph {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(fmt.Appendf(nil, `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: %s}
spec:
  schema: {apiVersion: v1alpha1, kind: %s, spec: {name: string}}
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: '${schema.metadata.name + "-config"}'}
      data: {value: '%s'}
`, name, kind, expr), rgd))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	return g
}

// labelSource gives one cluster's labels, which the test changes, and
// counts how often it is asked.
type labelSource struct {
	mu     sync.Mutex
	labels map[string]string
	asked  int
}

func (s *labelSource) get(multicluster.ClusterName) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	return maps.Clone(s.labels)
}

func (s *labelSource) set(labels map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.labels = labels
}

func (s *labelSource) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

// The runtime binds cluster per reconcile: a manager's own cluster is
// named "", a graph that reads only cluster.name never asks for labels,
// and a relabel reconciles again the instances of graphs that read
// labels, and only theirs.
func TestRuntimeBindsTheCluster(t *testing.T) {
	cl, err := fgtesting.StartCluster("cluster-var", fgtesting.ClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cl.Stop()) })
	c, err := client.New(cl.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)

	named := clusterRGD(t, "named", "Named", `[${cluster.name}]`)
	tiered := clusterRGD(t, "tiered", "Tiered", `${cluster.labels.?tier.orValue("none")}`)
	require.Equal(t, graph.ClusterName, named.UsesCluster())
	require.Equal(t, graph.ClusterLabels, tiered.UsesCluster())
	installCRD(t, c, named.CRD)
	installCRD(t, c, tiered.CRD)

	mgr, err := manager.New(cl.Config, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	labels := &labelSource{labels: map[string]string{"tier": "gold"}}
	rt := spoke.New(spoke.Options{ClusterLabels: labels.get, ClusterLabelsPoll: 100 * time.Millisecond})
	require.NoError(t, rt.SetupWithManager(mgr))
	require.NoError(t, rt.Serve(spoke.Version{Graph: named, Revision: 1}))
	startManager(t, mgr)

	createNamed(t, c, named, "a")
	requireValue(t, c, "a-config", "[]")
	requireActive(t, c, named, "a")
	assert.Zero(t, labels.count(), "a graph that reads only cluster.name never asks for labels")

	require.NoError(t, rt.Serve(spoke.Version{Graph: tiered, Revision: 1}))
	createNamed(t, c, tiered, "b")
	requireValue(t, c, "b-config", "gold")
	requireActive(t, c, tiered, "b")
	before := reconcileCount(t, "named")
	require.Positive(t, before, "the named graph's reconciles are counted")

	labels.set(map[string]string{"tier": "silver"})
	requireValue(t, c, "b-config", "silver")
	assert.Equal(t, before, reconcileCount(t, "named"), "a relabel does not requeue a graph that does not read labels")

	labels.set(nil)
	requireValue(t, c, "b-config", "none")
}

func createNamed(t *testing.T, c client.Client, g *graph.Graph, name string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": name}}}
	u.SetGroupVersionKind(g.Instance.GVK)
	u.SetNamespace("default")
	u.SetName(name)
	require.NoError(t, c.Create(t.Context(), u))
}

func requireValue(t *testing.T, c client.Client, name, want string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		v, _, _ := unstructured.NestedString(get(ct, c, configMapKind, name).Object, "data", "value")
		assert.Equal(ct, want, v)
	}, wait, tick)
}

func requireActive(t *testing.T, c client.Client, g *graph.Graph, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		state, _, _ := unstructured.NestedString(get(ct, c, g.Instance.GVK, name).Object, "status", "state")
		assert.Equal(ct, "ACTIVE", state)
	}, wait, tick)
}

// reconcileCount sums fleetgraph_spoke_reconcile_total of one graph.
func reconcileCount(t *testing.T, graphName string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != "fleetgraph_spoke_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "graph" && l.GetValue() == graphName {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// valueSource gives one graph's values, which the test changes.
type valueSource struct {
	mu     sync.Mutex
	values map[string]any
}

func (s *valueSource) get(_ multicluster.ClusterName, graphName string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if graphName != "valued" {
		return map[string]any{"replicas": int64(99)} // never read: no other graph reads values
	}
	return s.values
}

func (s *valueSource) set(values map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values = values
}

// A graph that reads cluster.values reads what Options.ClusterValues gives
// it, and follows a change when told of it; a graph that reads labels
// only is not requeued by the notice. With the labels' poll off, a relabel
// is followed when told of (ClusterLabelsChanged).
func TestRuntimeBindsClusterValues(t *testing.T) {
	cl, err := fgtesting.StartCluster("cluster-values", fgtesting.ClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cl.Stop()) })
	c, err := client.New(cl.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)

	valued := clusterRGD(t, "valued", "Valued", `${string(cluster.values.?replicas.orValue(1))}`)
	labelled := clusterRGD(t, "labelled", "Labelled", `${cluster.labels.?tier.orValue("none")}`)
	require.Equal(t, graph.ClusterValues, valued.UsesCluster())
	installCRD(t, c, valued.CRD)
	installCRD(t, c, labelled.CRD)

	mgr, err := manager.New(cl.Config, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	values := &valueSource{values: map[string]any{"replicas": int64(3)}}
	labels := &labelSource{labels: map[string]string{"tier": "gold"}}
	rt := spoke.New(spoke.Options{ClusterLabels: labels.get, ClusterValues: values.get, ClusterLabelsPoll: -1})
	require.NoError(t, rt.SetupWithManager(mgr))
	require.NoError(t, rt.Serve(spoke.Version{Graph: valued, Revision: 1}))
	require.NoError(t, rt.Serve(spoke.Version{Graph: labelled, Revision: 1}))
	startManager(t, mgr)

	createNamed(t, c, valued, "v")
	createNamed(t, c, labelled, "l")
	requireValue(t, c, "v-config", "3")
	requireValue(t, c, "l-config", "gold")
	requireActive(t, c, labelled, "l")
	before := reconcileCount(t, "labelled")

	values.set(map[string]any{"replicas": int64(5)})
	rt.ClusterValuesChanged("")
	requireValue(t, c, "v-config", "5")
	assert.Equal(t, before, reconcileCount(t, "labelled"), "a graph that does not read values is not requeued by a values notice")

	values.set(nil)
	rt.ClusterValuesChanged()
	requireValue(t, c, "v-config", "1")

	labels.set(map[string]string{"tier": "silver"})
	rt.ClusterLabelsChanged("")
	requireValue(t, c, "l-config", "silver")
}
