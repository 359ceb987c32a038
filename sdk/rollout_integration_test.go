//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// labelledProvider gives the fleet's clusters labels a test changes, as
// the secret provider takes them from kubeconfig Secrets.
type labelledProvider struct {
	*fgtesting.Provider
	mu     sync.Mutex
	labels map[string]map[string]string
}

var _ sdk.ClusterLabeler = &labelledProvider{}

func (p *labelledProvider) Labels(name multicluster.ClusterName) map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.labels[string(name)])
}

func (p *labelledProvider) label(cluster string, labels map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.labels[cluster] = labels
}

func newLabelledProvider(t *testing.T, fleet *fgtesting.Fleet, labels map[string]map[string]string) *labelledProvider {
	t.Helper()
	inner, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	return &labelledProvider{Provider: inner, labels: labels}
}

// tideRGD renders a graph whose revision 2 has readyWhen: an instance is
// Ready only when its color is wantColor.
func tideRGD(t testing.TB, name, kind, version, wantColor string) *v1alpha1.ResourceGraphDefinition {
	ready := ""
	if wantColor != "" {
		ready = fmt.Sprintf("\n    readyWhen:\n    - ${config.data.color == %q}", wantColor)
	}
	return rgdFromString(t, fmt.Sprintf(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: %s
spec:
  schema:
    apiVersion: v1alpha1
    kind: %s
    spec:
      color: string | default="red"
  resources:
  - id: config%s
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-tide
      data:
        color: ${schema.spec.color}
        version: %q
`, name, kind, ready, version))
}

// applyRollout applies a GraphRollout with a new client each attempt: a
// client's REST mapper does not see a kind installed after its group.
func applyRollout(t testing.TB, cfg *rest.Config, name string, spec map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName(name)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c, err := client.New(cfg, client.Options{})
		require.NoError(ct, err)
		err = c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()),
			client.FieldOwner("test"), client.ForceOwnership)
		require.NoError(ct, err)
	}, wait, tick, "applying GraphRollout %s (its CRD is installed by the hub)", name)
}

func rolloutStatus(t require.TestingT, c client.Client, name string) fgv1alpha1.GraphRolloutStatus {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, u))
	ro := &fgv1alpha1.GraphRollout{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ro))
	return ro.Status
}

// servedRevisions is the revision serving each cluster, from the hub's
// rollout view.
func servedRevisions(h *sdk.Hub, graphName string) map[string]int64 {
	st, _ := h.Rollout(graphName)
	out := map[string]int64{}
	for _, c := range st.Clusters {
		out[c.Name] = c.Revision
	}
	return out
}

func clientsOf(t *testing.T, fleet *fgtesting.Fleet) map[string]client.Client {
	out := map[string]client.Client{}
	for _, s := range fleet.Spokes() {
		out[s.Name] = newClient(t, s.Config)
	}
	return out
}

// Placement by label: 2 of 4 spokes serve the graph. Relabelling one in and
// one out moves the graph; the one that left keeps its CRD and instances.
func TestPlacementFollowsClusterLabels(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 4) // its own: the rollout controller reads every GraphRollout on its hub cluster
	prod := map[string]string{"env": "prod"}
	provider := newLabelledProvider(t, fleet, map[string]map[string]string{
		"spoke-1": prod, "spoke-2": prod, "spoke-3": {"env": "dev"},
	})
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: 200 * time.Millisecond}})
	ctx := context.Background()
	spokes := clientsOf(t, fleet)
	applyRollout(t, fleet.Hub.Config, "tide", map[string]any{
		"graph": "tide", "clusterSelector": map[string]any{"matchLabels": map[string]any{"env": "prod"}},
	})
	rgd := tideRGD(t, "tide", "Tide", "1", "")
	require.NoError(t, h.RegisterGraph(ctx, rgd))
	crd := "tides.kro.run"

	createWhenServed(t, spokes["spoke-1"], instance(tideGVK, "kept", map[string]any{"color": "blue"}))
	requireState(t, spokes["spoke-1"], tideGVK, "kept", "ACTIVE")
	createWhenServed(t, spokes["spoke-2"], instance(tideGVK, "two", map[string]any{}))
	requireState(t, spokes["spoke-2"], tideGVK, "two", "ACTIVE")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]int64{"spoke-1": 1, "spoke-2": 1}, servedRevisions(h, "tide"))
	}, wait, tick)
	assert.False(t, crdExists(t, fleet.Spoke("spoke-3"), crd), "spoke-3 is not placed")
	assert.False(t, crdExists(t, fleet.Spoke("spoke-4"), crd), "spoke-4 is not placed")

	// spoke-1 leaves, spoke-3 joins.
	provider.label("spoke-1", map[string]string{"env": "dev"})
	provider.label("spoke-3", prod)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]int64{"spoke-2": 1, "spoke-3": 1}, servedRevisions(h, "tide"))
		st := served(h, "tide")
		assert.False(ct, st["spoke-1"].Serving, "spoke-1 is served no more")
	}, wait, tick)
	createWhenServed(t, spokes["spoke-3"], instance(tideGVK, "three", map[string]any{}))
	requireState(t, spokes["spoke-3"], tideGVK, "three", "ACTIVE")

	// spoke-1 keeps its CRD, its instance and the instance's child; the
	// instance no longer holds our finalizer, so it can still be deleted.
	assert.True(t, crdExists(t, fleet.Spoke("spoke-1"), crd))
	require.Eventually(t, func() bool { return !holdsFinalizer(t, spokes["spoke-1"], tideGVK, "kept") }, wait, tick)
	data, err := configMapData(spokes["spoke-1"], "kept-tide")
	require.NoError(t, err)
	assert.Equal(t, "blue", data["color"])
	assert.False(t, crdExists(t, fleet.Spoke("spoke-4"), crd))
}

var tideGVK = webAppGVK.GroupVersion().WithKind("Tide")

// A breaking change never reaches a cluster that serves the graph: the
// rollout names the cluster holding it back, and the cluster keeps the
// previous revision. The Go placement hook keeps the graph off spoke-2.
func TestABreakingChangeIsHeldBackByName(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 2) // its own: the rollout controller reads every GraphRollout on its hub cluster
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{

		RGDs: sdk.RGDOptions{DisableController: true},
		Rollouts: sdk.RolloutOptions{
			Resync:    200 * time.Millisecond,
			Placement: func(graph, cluster string, _ map[string]string) bool { return graph != "tilt" || cluster != "spoke-2" },
		},
	})
	ctx := context.Background()
	c1 := newClient(t, fleet.Spoke("spoke-1").Config)
	applyRollout(t, fleet.Hub.Config, "tilt", map[string]any{"graph": "tilt"})
	require.NoError(t, h.RegisterGraph(ctx, tideRGD(t, "tilt", "Tilt", "1", "")))
	gvk := webAppGVK.GroupVersion().WithKind("Tilt")
	createWhenServed(t, c1, instance(gvk, "app", map[string]any{"color": "blue"}))
	requireState(t, c1, gvk, "app", "ACTIVE")

	breaking := tideRGD(t, "tilt", "Tilt", "2", "")
	breaking.Spec.Schema.Spec.Raw = []byte(`{"color":"integer | default=1"}`)
	breaking.Spec.Resources[0].Template.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${schema.metadata.name}-tide"},"data":{"color":"${string(schema.spec.color)}","version":"2"}}`)
	require.NoError(t, h.RegisterGraph(ctx, breaking))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st, ok := h.Rollout("tilt")
		require.True(ct, ok)
		assert.Equal(ct, int64(2), st.TargetRevision)
		require.Len(ct, st.HoldingBack, 1)
		assert.Equal(ct, "spoke-1", st.HoldingBack[0].Name)
		assert.Contains(ct, st.HoldingBack[0].Message, "Incompatible")
		assert.Equal(ct, map[string]int64{"spoke-1": 1}, servedRevisions(h, "tilt"))
	}, wait, tick)
	requireVersion(t, c1, "app", "1")
	assert.False(t, crdExists(t, fleet.Spoke("spoke-2"), "tilts.kro.run"), "the hook keeps spoke-2 out")
}
