//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	wait = 60 * time.Second
	tick = 100 * time.Millisecond
)

var (
	webAppGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "WebApp"}
	cacheGVK  = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Cache"}
)

// shared is the fleet of a hub and two spokes ("spoke-1", "spoke-2") that
// the package's parallel tests share (main_test.go says which may): started
// on first use, stopped by TestMain.
var shared struct {
	once  sync.Once
	fleet *fgtesting.Fleet
	err   error
}

// sharedFleet returns the package's shared fleet, starting it on first use.
// A test that uses it runs its own Hub on it (startHub with a provider from
// fleet.NewProvider, RGD controller off) and serves only graphs named and
// kinded for itself (renamedRGD), so that what its Hub keeps on the hub
// cluster (the graphs' revisions) and installs on the spokes (CRDs,
// admission policies) is keyed by names no other test uses. It must not
// stop, pause or relabel a spoke, install CRDs of its own, or create
// objects every Hub reads (RGDs, GraphRollouts, kubeconfig Secrets).
func sharedFleet(t testing.TB) *fgtesting.Fleet {
	t.Helper()
	shared.once.Do(func() {
		shared.fleet, shared.err = fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 2})
		if shared.err == nil {
			stopSharedFleet = shared.fleet.Stop
		}
	})
	if shared.err != nil {
		t.Fatalf("starting the shared fleet of 1 hub and 2 spokes: %v", shared.err)
	}
	return shared.fleet
}

// renamedRGD returns a copy of rgd named name whose generated kind is kind
// (group and version unchanged), so that tests on the shared fleet never
// serve one graph or one CRD. The kind's GVK is returned with it.
func renamedRGD(rgd *v1alpha1.ResourceGraphDefinition, name, kind string) (*v1alpha1.ResourceGraphDefinition, schema.GroupVersionKind) {
	out := rgd.DeepCopy()
	out.Name = name
	out.Spec.Schema.Kind = kind
	group := out.Spec.Schema.Group
	if group == "" {
		group = webAppGVK.Group
	}
	return out, schema.GroupVersionKind{Group: group, Version: out.Spec.Schema.APIVersion, Kind: kind}
}

// crdName is the name of the CRD the hub generates for gvk.
func crdName(gvk schema.GroupVersionKind) string {
	return graph.Plural(gvk.Kind) + "." + gvk.Group
}

// startHub sets a Hub up in a new multicluster manager for the hub cluster
// at cfg and runs it until the test ends.
func startHub(t testing.TB, cfg *rest.Config, provider multicluster.Provider, opts sdk.Options) *sdk.Hub {
	t.Helper()
	h, _ := startStoppableHub(t, cfg, provider, opts)
	return h
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return c
}

func instance(gvk schema.GroupVersionKind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

// createWhenServed creates obj, retrying while its kind is not served yet.
func createWhenServed(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		err := c.Create(context.Background(), obj.DeepCopy())
		require.NoError(ct, client.IgnoreAlreadyExists(err))
	}, wait, tick, "creating %s %s", obj.GetKind(), obj.GetName())
}

func state(c client.Client, gvk schema.GroupVersionKind, name string) string {
	return stateIn(c, gvk, "default", name)
}

// stateIn is the status.state of the instance ns/name of kind gvk, or the
// error reading it.
func stateIn(c client.Client, gvk schema.GroupVersionKind, ns, name string) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return "get: " + err.Error()
	}
	s, _, _ := unstructured.NestedString(u.Object, "status", "state")
	return s
}

func requireState(t *testing.T, c client.Client, gvk schema.GroupVersionKind, name, want string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, want, state(c, gvk, name))
	}, wait, tick, "%s %s should reach %s", gvk.Kind, name, want)
}

func configMapData(c client.Client, name string) (map[string]string, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, cm)
	return cm.Data, err
}

func rgdCondition(c client.Client, name, typ string) *metav1.Condition {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, rgd); err != nil {
		return nil
	}
	for i := range rgd.Status.Conditions {
		if rgd.Status.Conditions[i].Type == typ {
			return &rgd.Status.Conditions[i]
		}
	}
	return nil
}

func clusterStates(h *sdk.Hub, graph string) map[string]string {
	out := map[string]string{}
	for _, c := range h.FleetStatus(graph).Clusters {
		out[c.Cluster] = fmt.Sprintf("%s %d/%d", c.CRD, c.ReadyInstances, c.Instances)
	}
	return out
}
