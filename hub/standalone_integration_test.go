//go:build integration

package hub_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	wait = 60 * time.Second
	tick = 100 * time.Millisecond
)

// startFanOut runs a FanOut and its Prober in a multicluster manager over
// the fleet's two spokes until the test ends: no instance runtime, no
// compiler, as a platform that runs kro in each cluster would.
func startFanOut(t *testing.T) *hub.FanOut {
	t.Helper()
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	mgr, err := mcmanager.New(fleet.Hub.Config, provider, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	f := hub.New(hub.Options{})
	require.NoError(t, mgr.Add(f))
	require.NoError(t, mgr.Add(hub.NewProber(f, hub.ProberOptions{})))
	fgtesting.Start(t, mgr.Start)
	return f
}

func states(st hub.GraphStatus) map[string]hub.CRDState {
	out := map[string]hub.CRDState{}
	for _, c := range st.Clusters {
		out[c.Cluster] = c.CRD
	}
	return out
}

func clusterStatus(st hub.GraphStatus, name string) hub.ClusterStatus {
	for _, c := range st.Clusters {
		if c.Cluster == name {
			return c
		}
	}
	return hub.ClusterStatus{}
}

// withSize gives g's CRD a spec.size of the given type.
func withSize(g hub.Graph, typ string) hub.Graph {
	g.CRD = g.CRD.DeepCopy()
	g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema = &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: typ}}},
		},
	}
	return g
}

// A FanOut alone fans a graph's CRD out to two clusters and reads where it
// stands on each: a cluster that lacks a kind the graph needs is
// Incompatible, named, until it serves the kind; the CRD is applied,
// labelled as ours and established; a breaking change is refused on every
// cluster and the served CRD stays, unless the graph allows it; a CRD
// another manager owns is never touched.
func TestAFanOutAloneServesTwoClustersAndTellsEachState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	widget := schema.GroupVersionKind{Group: "standalone.fleetgraph.dev", Version: "v1", Kind: "Widget"}
	gadget := schema.GroupVersionKind{Group: "standalone.fleetgraph.dev", Version: "v1", Kind: "Gadget"}
	spoke1, spoke2 := fleet.Spoke("spoke-1"), fleet.Spoke("spoke-2")
	require.NoError(t, spoke1.InstallCRDs(fgtesting.NewCRD(widget, "widgets", apiextensionsv1.NamespaceScoped)))
	f := startFanOut(t)

	g := withSize(graphOf("gadgets", gadget, "gadgets", widget, serviceGVK), "integer")
	f.Serve(g)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := f.Status("gadgets")
		assert.Equal(ct, map[string]hub.CRDState{"spoke-1": hub.CRDEstablished, "spoke-2": hub.CRDIncompatible}, states(st))
		assert.Contains(ct, clusterStatus(st, "spoke-2").Message, "kinds not served: standalone.fleetgraph.dev/v1, Kind=Widget")
	}, wait, tick)
	c1, err := client.New(spoke1.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, c1.Get(ctx, client.ObjectKey{Name: g.CRD.Name}, crd))
	assert.Equal(t, v1alpha1.ManagedByFleetgraph, crd.Labels[v1alpha1.LabelManagedBy])
	assert.Contains(t, crd.ManagedFields[0].Manager, hub.DefaultFieldManager)

	require.NoError(t, spoke2.InstallCRDs(fgtesting.NewCRD(widget, "widgets", apiextensionsv1.NamespaceScoped)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]hub.CRDState{"spoke-1": hub.CRDEstablished, "spoke-2": hub.CRDEstablished},
			states(f.Status("gadgets")), "the spoke that learns the kind is retried")
	}, wait, tick)

	g2 := withSize(g, "string")
	g2.Generation = 2
	f.Serve(g2)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := f.Status("gadgets")
		for _, name := range []string{"spoke-1", "spoke-2"} {
			c := clusterStatus(st, name)
			assert.Equal(ct, hub.CRDIncompatible, c.CRD, name)
			assert.Contains(ct, c.Message, "breaking schema change: v1: spec.size: type changed from integer to string", name)
			assert.EqualValues(ct, 2, c.Generation)
		}
	}, wait, tick)
	require.NoError(t, c1.Get(ctx, client.ObjectKey{Name: g.CRD.Name}, crd))
	assert.Equal(t, "integer", crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"].Type, "the served CRD stays")

	g2.AllowBreaking = true
	f.Serve(g2)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]hub.CRDState{"spoke-1": hub.CRDEstablished, "spoke-2": hub.CRDEstablished}, states(f.Status("gadgets")))
	}, wait, tick)

	// A CRD of that name that another manager owns on spoke-2 is left as
	// it is, and reported.
	sprocket := schema.GroupVersionKind{Group: "standalone.fleetgraph.dev", Version: "v1", Kind: "Sprocket"}
	require.NoError(t, spoke2.InstallCRDs(fgtesting.NewCRD(sprocket, "sprockets", apiextensionsv1.NamespaceScoped)))
	f.Serve(graphOf("sprockets", sprocket, "sprockets"))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]hub.CRDState{"spoke-1": hub.CRDEstablished, "spoke-2": hub.CRDConflict}, states(f.Status("sprockets")))
	}, wait, tick)

	f.Stop("sprockets")
	assert.Empty(t, f.Status("sprockets").Clusters, "a stopped graph is forgotten")
	assert.Len(t, f.Status("gadgets").Clusters, 2)
}
