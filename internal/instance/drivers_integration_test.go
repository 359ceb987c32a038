//go:build integration

package instance_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/hubgraph"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The drivers of the engine, on real API servers. The package's tests
// share one fleet, a hub and one spoke (its "target"), started on first
// use and stopped by TestMain. The spoke driver serves a graph on the
// target: instances and children both there. The hub-graph driver serves
// the same graph with every resource targeted at the target: instances
// on the hub, children on the target. Each case of a test runs through
// both, each with a graph, a kind and a namespace of its own.

const (
	wait = 60 * time.Second
	tick = 100 * time.Millisecond
	// targetName is the name the target spoke is engaged under.
	targetName = "target"
)

func init() { log.SetLogger(logr.Discard()) }

var shared struct {
	once  sync.Once
	fleet *fgtesting.Fleet
	err   error
}

// sharedFleet returns the package's fleet, starting it on first use.
func sharedFleet(t testing.TB) *fgtesting.Fleet {
	t.Helper()
	shared.once.Do(func() {
		shared.fleet, shared.err = fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 1})
		if shared.err == nil {
			stopSharedFleet = shared.fleet.Stop
		}
	})
	if shared.err != nil {
		t.Fatalf("starting the shared fleet of a hub and a spoke: %v", shared.err)
	}
	return shared.fleet
}

// driver serves a graph through one of the engine's drivers.
type driver interface {
	// name names the driver in subtests and in its graphs' names.
	name() string
	// serve serves the graph of rgdYAML, compiled as graph name with
	// lim, with opts, and returns where it lives. Its instances and
	// children are in namespace name.
	serve(t *testing.T, name, rgdYAML string, opts instance.Options, lim graph.Limits) *world
}

// drivers are the engine's drivers, each case of a shared test runs
// through every one of them.
var drivers = []driver{spokeDriver{}, hubDriver{}}

// eachDriver runs f as a parallel subtest for each driver, with a graph
// of its own named after the test's case and the driver.
func eachDriver(t *testing.T, name, rgdYAML string, opts instance.Options, lim graph.Limits, f func(t *testing.T, w *world)) {
	for _, d := range drivers {
		t.Run(d.name(), func(t *testing.T) {
			t.Parallel()
			f(t, d.serve(t, name+"-"+d.name(), rgdYAML, opts, lim))
		})
	}
}

// world is a graph served by a driver: where its instances live, where
// its children live, and its namespace in both.
type world struct {
	g         *graph.Graph
	instances client.Client
	children  client.Client
	ns        string
}

// spokeDriver is the spoke runtime on the target: one cluster for all.
type spokeDriver struct{}

func (spokeDriver) name() string { return "spoke" }

func (spokeDriver) serve(t *testing.T, name, rgdYAML string, opts instance.Options, lim graph.Limits) *world {
	t.Helper()
	fleet := sharedFleet(t)
	target := fleet.Spokes()[0]
	g := compileAs(t, rgdYAML, name, lim, nil)
	c := newClient(t, target.Config)
	require.NoError(t, target.InstallCRDs(g.CRD))
	createNamespace(t, c, name)
	provider := fgtesting.NewProvider(cacheopts.TrimCache)
	require.NoError(t, provider.AddConfig(context.Background(), targetName, target.Config))
	mgr, err := mcmanager.New(fleet.Hub.Config, provider, managerOptions())
	require.NoError(t, err)
	rt := spoke.New(spoke.Config{Options: opts})
	require.NoError(t, mgr.Add(rt))
	fgtesting.Start(t, mgr.Start)
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	return &world{g: g, instances: c, children: c, ns: name}
}

// hubDriver is hub graphs: instances on the hub, every resource targeted
// at the target.
type hubDriver struct{}

func (hubDriver) name() string { return "hub" }

func (hubDriver) serve(t *testing.T, name, rgdYAML string, opts instance.Options, lim graph.Limits) *world {
	t.Helper()
	fleet := sharedFleet(t)
	target := fleet.Spokes()[0]
	g := compileAs(t, rgdYAML, name, lim, &v1alpha1.Target{Cluster: &v1alpha1.ClusterTarget{Name: targetName}})
	require.True(t, g.IsHubGraph())
	hubClient, targetClient := newClient(t, fleet.Hub.Config), newClient(t, target.Config)
	createNamespace(t, hubClient, name)
	createNamespace(t, targetClient, name)
	mgr, err := manager.New(fleet.Hub.Config, managerOptions())
	require.NoError(t, err)
	targetCluster, err := cluster.New(rest.CopyConfig(target.Config), cacheopts.ReportWatchErrors, cacheopts.TrimCache)
	require.NoError(t, err)
	require.NoError(t, mgr.Add(targetCluster))
	rt := hubgraph.New(hubgraph.Options{
		Clusters:  oneTarget{hub: mgr, target: targetCluster},
		HubName:   "shared-suite",
		Instances: opts,
	})
	require.NoError(t, mgr.Add(rt))
	fgtesting.Start(t, mgr.Start)
	require.NoError(t, rt.Serve(g))
	return &world{g: g, instances: hubClient, children: targetClient, ns: name}
}

// oneTarget is a fleet of one target cluster besides the hub.
type oneTarget struct {
	hub, target cluster.Cluster
}

var _ hubgraph.Clusters = oneTarget{}

func (o oneTarget) Hub() cluster.Cluster { return o.hub }
func (o oneTarget) Cluster(_ context.Context, name string) (cluster.Cluster, error) {
	if name != targetName {
		return nil, fmt.Errorf("no cluster %q", name)
	}
	return o.target, nil
}
func (o oneTarget) Names() []string                             { return []string{targetName} }
func (o oneTarget) Labels(string) map[string]string             { return nil }
func (o oneTarget) SecretCluster(string, string) (string, bool) { return "", false }

func managerOptions() manager.Options {
	return manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Scheme:                 fgtesting.NewScheme(),
	}
}

// compileAs compiles rgdYAML as graph name, of a kind made from name
// ("adopt-hub": AdoptHub), with lim, and with the RGD-wide target to
// when it is set.
func compileAs(t testing.TB, rgdYAML, name string, lim graph.Limits, to *v1alpha1.Target) *graph.Graph {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.Unmarshal([]byte(rgdYAML), rgd))
	rgd.Name = name
	kind := ""
	for _, part := range strings.Split(name, "-") {
		if part != "" {
			kind += strings.ToUpper(part[:1]) + part[1:]
		}
	}
	rgd.Spec.Schema.Kind = kind
	rgd.Spec.Target = to
	g, err := graph.Compile(rgd, graph.Options{Limits: lim})
	require.NoError(t, err)
	return g
}

func newClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return c
}

func createNamespace(t testing.TB, c client.Client, name string) {
	t.Helper()
	ns := &corev1.Namespace{}
	ns.Name = name
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(context.Background(), ns)))
}

// create creates the instance name with spec, once its kind is served.
func (w *world) create(t *testing.T, name string, spec map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(w.g.Instance.GVK)
	u.SetNamespace(w.ns)
	u.SetName(name)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(w.instances.Create(context.Background(), u.DeepCopy())))
	}, wait, tick, "creating %s", name)
}

// instance reads the instance name; nil when it is gone.
func (w *world) instance(t require.TestingT, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(w.g.Instance.GVK)
	err := w.instances.Get(context.Background(), types.NamespacedName{Namespace: w.ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return u
}

// says waits until the instance name's state is state and its Ready
// condition has reason and contains each of msg.
func (w *world) says(t *testing.T, name, state, reason string, msg ...string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := w.instance(ct, name)
		require.NotNil(ct, u, "instance %s", name)
		got, _, _ := unstructured.NestedString(u.Object, "status", "state")
		assert.Equal(ct, state, got)
		ready := readyOf(u)
		assert.Equal(ct, reason, ready["reason"], "Ready: %v", ready)
		for _, m := range msg {
			assert.Contains(ct, ready["message"], m)
		}
	}, wait, tick, "instance %s says %s %s", name, state, reason)
}

// active waits until the instance name is ACTIVE.
func (w *world) active(t *testing.T, name string) { w.says(t, name, "ACTIVE", "Ready") }

func readyOf(u *unstructured.Unstructured) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m
		}
	}
	return nil
}

// child reads the ConfigMap name in the children's cluster; nil when it
// does not exist.
func (w *world) child(t require.TestingT, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	err := w.children.Get(context.Background(), types.NamespacedName{Namespace: w.ns, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return cm
}

// childData waits until the child name has data[key] == want.
func (w *world) childData(t *testing.T, name, key, want string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cm := w.child(ct, name)
		require.NotNil(ct, cm, "child %s", name)
		assert.Equal(ct, want, cm.Data[key])
	}, wait, tick, "child %s has %s=%s", name, key, want)
}

// gone waits until the child name does not exist.
func (w *world) gone(t *testing.T, name string, why string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Nil(ct, w.child(ct, name))
	}, wait, tick, why)
}

// instanceGone waits until the instance name does not exist.
func (w *world) instanceGone(t *testing.T, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Nil(ct, w.instance(ct, name))
	}, wait, tick, "instance %s is gone", name)
}

// delete deletes the instance name.
func (w *world) delete(t *testing.T, name string) {
	t.Helper()
	u := w.instance(t, name)
	require.NotNil(t, u)
	require.NoError(t, client.IgnoreNotFound(w.instances.Delete(context.Background(), u)))
}

// patchSpec merge-patches the instance name.
func (w *world) patchSpec(t *testing.T, name, patch string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(w.g.Instance.GVK)
	u.SetNamespace(w.ns)
	u.SetName(name)
	require.NoError(t, w.instances.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(patch))))
}

// patchChild merge-patches the child name in the children's cluster.
func (w *world) patchChild(t *testing.T, name, patch string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = w.ns, name
	require.NoError(t, w.children.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, []byte(patch))))
}

// putChild creates obj in the children's cluster as someone else would,
// with a field manager of their own.
func (w *world) putChild(t *testing.T, obj *corev1.ConfigMap) {
	t.Helper()
	obj.Namespace = w.ns
	require.NoError(t, w.children.Create(context.Background(), obj, client.FieldOwner("someone-else")))
}
