package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// slowGVK is the kind whose schema gatedResolver holds back.
var slowGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Slow"}

// gatedResolver is a SchemaResolver that knows no kind, except that a
// lookup of slowGVK waits until release is closed: a compile that uses
// that kind is as slow as the test wants. entered is closed at the first
// such lookup. Other kinds may be given schemas (set).
type gatedResolver struct {
	release, entered chan struct{}
	once             sync.Once

	mu      sync.Mutex
	schemas map[schema.GroupVersionKind]*spec.Schema
}

func newGatedResolver() *gatedResolver {
	return &gatedResolver{release: make(chan struct{}), entered: make(chan struct{}), schemas: map[schema.GroupVersionKind]*spec.Schema{}}
}

func (r *gatedResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if gvk == slowGVK {
		r.once.Do(func() { close(r.entered) })
		<-r.release
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.schemas[gvk]; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("%w: %s", graph.ErrSchemaNotFound, gvk)
}

func (r *gatedResolver) set(gvk schema.GroupVersionKind, s *spec.Schema) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.schemas[gvk] = s
}

// slowRGD is an RGD of kind kind with one child of the gated kind.
func slowRGD(name, kind string) *v1alpha1.ResourceGraphDefinition {
	return &v1alpha1.ResourceGraphDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ResourceGraphDefinitionSpec{
			Schema: v1alpha1.Schema{APIVersion: "v1alpha1", Kind: kind, Spec: runtime.RawExtension{Raw: []byte(`{"name":"string"}`)}},
			Resources: []v1alpha1.Resource{{ID: "slow", Template: runtime.RawExtension{Raw: []byte(
				`{"apiVersion":"example.com/v1","kind":"Slow","metadata":{"name":"${schema.spec.name}"}}`)}}},
		},
	}
}

// startFakeFleetWith is startFakeFleet with the given options (the RGD
// controller stays off).
func startFakeFleetWith(t *testing.T, opts sdk.Options) *sdk.Hub {
	t.Helper()
	ctx := context.Background()
	provider := fgtesting.NewFakeProvider()
	for _, name := range []string{"a", "b"} {
		cl, err := provider.AddCluster(ctx, name, fgtesting.FakeClusterOptions{})
		require.NoError(t, err)
		t.Cleanup(cl.Close)
	}
	opts.RGDs.DisableController = true
	opts.Rollouts.Disable = true // the hub cluster is never contacted
	h, err := sdk.NewHub(provider, opts)
	require.NoError(t, err)
	mgr, err := mcmanager.New(&rest.Config{Host: "https://127.0.0.1:1"}, provider, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	fgtesting.Start(t, mgr.Start)
	return h
}

// startFakeHubFleet runs a Hub whose hub cluster is a fake one, with the
// RGD controller on, and one fake spoke.
func startFakeHubFleet(t *testing.T, opts sdk.Options) (*sdk.Hub, client.Client) {
	t.Helper()
	ctx := context.Background()
	rgdCRD, err := v1alpha1.CRD()
	require.NoError(t, err)
	hubCluster := fgtesting.NewFakeCluster(fgtesting.FakeClusterOptions{
		Scheme: fgtesting.NewScheme(), Objects: []client.Object{rgdCRD},
	})
	t.Cleanup(hubCluster.Close)
	provider := fgtesting.NewFakeProvider()
	spoke, err := provider.AddCluster(ctx, "a", fgtesting.FakeClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(spoke.Close)
	h, err := sdk.NewHub(provider, opts)
	require.NoError(t, err)
	mgr, err := mcmanager.New(hubCluster.GetConfig(), provider, hubCluster.ManagerOptions(manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	}))
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	fgtesting.Start(t, mgr.Start)
	return h, hubCluster.GetClient()
}

// waitRGDCondition waits until the named RGD's condition typ has status want,
// and returns it.
func waitRGDCondition(t *testing.T, c client.Client, name, typ string, want metav1.ConditionStatus) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, c.Get(context.Background(), client.ObjectKey{Name: name}, rgd))
		got = meta.FindStatusCondition(rgd.Status.Conditions, typ)
		require.NotNil(ct, got, "conditions: %v", rgd.Status.Conditions)
		assert.Equal(ct, want, got.Status, "%s: %s", got.Reason, got.Message)
	}, fakeWait, time.Millisecond, "RGD %s: %s is %s", name, typ, want)
	return got
}

// A compile that takes long (here: its schema resolver does not answer)
// delays no other graph: registering another one from Go returns, and the
// graph is served, while the slow compile is still running.
func TestASlowCompileDelaysOnlyItsOwnGraph(t *testing.T) {
	res := newGatedResolver()
	h := startFakeFleetWith(t, sdk.Options{Compile: sdk.CompileOptions{SchemaResolver: res}})
	ctx := context.Background()

	slowDone := make(chan error, 1)
	go func() { slowDone <- h.RegisterGraph(ctx, slowRGD("slow", "SlowApp")) }()
	select {
	case <-res.entered:
	case <-time.After(fakeWait):
		t.Fatal("the slow graph's compile never asked for its kind")
	}

	fastDone := make(chan error, 1)
	go func() { fastDone <- h.RegisterGraph(ctx, readRGD(t, "testdata/webapp-rgd.yaml")) }()
	select {
	case err := <-fastDone:
		require.NoError(t, err)
	case <-time.After(fakeWait):
		t.Fatal("registering webapp waited for the slow graph's compile")
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := h.FleetStatus("webapp")
		assert.Len(ct, st.Clusters, 2)
		for _, c := range st.Clusters {
			assert.Equal(ct, sdk.CRDEstablished, c.CRD, "cluster %s", c.Cluster)
		}
	}, fakeWait, time.Millisecond, "webapp is served while slow still compiles")
	select {
	case err := <-slowDone:
		t.Fatalf("the slow registration returned before its resolver answered: %v", err)
	default:
	}

	close(res.release)
	select {
	case err := <-slowDone:
		require.NoError(t, err)
	case <-time.After(fakeWait):
		t.Fatal("the slow registration never returned")
	}
	assert.ElementsMatch(t, []string{"webapp", "slow"}, h.Graphs())
}

// The RGD controller does not wait for a slow compile either: another RGD
// becomes Ready meanwhile, and the slow one once its compile ends.
func TestASlowCompileDoesNotHoldTheRGDController(t *testing.T) {
	res := newGatedResolver()
	h, c := startFakeHubFleet(t, sdk.Options{Compile: sdk.CompileOptions{SchemaResolver: res}})
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, slowRGD("slow", "SlowApp")))
	select {
	case <-res.entered:
	case <-time.After(fakeWait):
		t.Fatal("the slow RGD's compile never asked for its kind")
	}
	require.NoError(t, c.Create(ctx, readRGD(t, "testdata/webapp-rgd.yaml")))
	waitRGDCondition(t, c, "webapp", v1alpha1.ConditionReady, metav1.ConditionTrue)
	assert.Equal(t, []string{"webapp"}, h.Graphs(), "slow is still compiling")

	close(res.release)
	// Accepted; not Ready, since no spoke serves its child kind.
	waitRGDCondition(t, c, "slow", v1alpha1.ConditionGraphAccepted, metav1.ConditionTrue)
	assert.ElementsMatch(t, []string{"webapp", "slow"}, h.Graphs())
}

// An RGD that does not compile is compiled once, not at every status
// resync: its failure is remembered until its spec changes.
func TestAnInvalidRGDIsCompiledOnce(t *testing.T) {
	h, c := startFakeHubFleet(t, sdk.Options{Compile: sdk.CompileOptions{DisableSchemaResolver: true}, Fleet: sdk.FleetOptions{StatusResync: 20 * time.Millisecond}})
	ctx := context.Background()
	bad := readRGD(t, "testdata/invalid-rgd.yaml")
	require.NoError(t, c.Create(ctx, bad))
	cond := waitRGDCondition(t, c, "broken", v1alpha1.ConditionGraphAccepted, metav1.ConditionFalse)
	assert.Contains(t, cond.Message, "nmae")

	require.Eventually(t, func() bool { _, reused := sdk.CompileCounts(h); return reused >= 10 },
		fakeWait, time.Millisecond, "the RGD is reconciled at every resync")
	runs, _ := sdk.CompileCounts(h)
	assert.Equal(t, int64(1), runs, "compiled once, its failure reused since")

	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(bad), bad))
	bad.Spec.Resources[0].Template.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${schema.spec.name}"}}`)
	bad.Generation++ // the fake cluster does not bump it
	require.NoError(t, c.Update(ctx, bad))
	waitRGDCondition(t, c, "broken", v1alpha1.ConditionGraphAccepted, metav1.ConditionTrue)
	runs, _ = sdk.CompileCounts(h)
	assert.Equal(t, int64(2), runs, "a changed spec is compiled again")
}

// A failure is remembered only while the hub's schemas say what they said
// at the compile: once a child kind's schema changes, the RGD is compiled
// again at the next resync.
func TestAFailureIsForgottenWhenAChildKindChanges(t *testing.T) {
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetSchema := func(fields ...string) *spec.Schema {
		specProps := map[string]spec.Schema{}
		for _, f := range fields {
			specProps[f] = *spec.StringProperty()
		}
		s := &spec.Schema{}
		s.Type = spec.StringOrArray{"object"}
		s.Properties = map[string]spec.Schema{
			"apiVersion": *spec.StringProperty(), "kind": *spec.StringProperty(),
			"metadata": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}},
			"spec":     {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}, Properties: specProps}},
		}
		return s
	}
	res := newGatedResolver()
	res.set(widget, widgetSchema("color"))
	h, c := startFakeHubFleet(t, sdk.Options{Compile: sdk.CompileOptions{SchemaResolver: res}, Fleet: sdk.FleetOptions{StatusResync: 20 * time.Millisecond}})
	ctx := context.Background()
	rgd := slowRGD("widgets", "WidgetApp")
	rgd.Spec.Resources[0] = v1alpha1.Resource{ID: "widget", Template: runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"${schema.spec.name}"},"spec":{"size":"${schema.spec.name}"}}`)}}
	require.NoError(t, c.Create(ctx, rgd))
	cond := waitRGDCondition(t, c, "widgets", v1alpha1.ConditionGraphAccepted, metav1.ConditionFalse)
	assert.Contains(t, cond.Message, `unknown field "size"`)
	require.Eventually(t, func() bool { _, reused := sdk.CompileCounts(h); return reused >= 3 },
		fakeWait, time.Millisecond, "the RGD is reconciled at every resync")
	runs, _ := sdk.CompileCounts(h)
	require.Equal(t, int64(1), runs)

	res.set(widget, widgetSchema("color", "size")) // the Widget CRD gained a field
	waitRGDCondition(t, c, "widgets", v1alpha1.ConditionGraphAccepted, metav1.ConditionTrue)
	runs, _ = sdk.CompileCounts(h)
	assert.Equal(t, int64(2), runs)
}

// Registrations of one name from many goroutines at once end with a graph
// compiled from the spec registered with it, and the last registration's
// spec served; two graphs of one kind registered at once never both serve.
func TestConcurrentRegistrations(t *testing.T) {
	h, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, err)
	ctx := context.Background()
	variant := func(name, image string) *v1alpha1.ResourceGraphDefinition {
		rgd := readRGD(t, "testdata/webapp-rgd.yaml")
		rgd.Name = name
		raw, err := json.Marshal(map[string]string{
			"name": "string | required=true", "image": fmt.Sprintf("string | default=%q", image), "replicas": "integer | default=1",
		})
		require.NoError(t, err)
		rgd.Spec.Schema.Spec.Raw = raw
		return rgd
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() { assert.NoError(t, h.RegisterGraph(ctx, variant("webapp", fmt.Sprintf("image-%d", i)))) })
	}
	wg.Wait()
	spec, crdDefault := sdk.ServedImageDefault(h, "webapp")
	assert.Equal(t, spec, crdDefault, "the graph served was compiled from the spec served")

	require.NoError(t, h.RegisterGraph(ctx, variant("webapp", "final")))
	spec, crdDefault = sdk.ServedImageDefault(h, "webapp")
	assert.Equal(t, `"final"`, spec)
	assert.Equal(t, `"final"`, crdDefault)

	for round := range 8 {
		a, b := variant(fmt.Sprintf("a%d", round), "x"), variant(fmt.Sprintf("b%d", round), "x")
		a.Spec.Schema.Kind, b.Spec.Schema.Kind = fmt.Sprintf("Twin%d", round), fmt.Sprintf("Twin%d", round)
		errs := make([]error, 2)
		wg.Go(func() { errs[0] = h.RegisterGraph(ctx, a) })
		wg.Go(func() { errs[1] = h.RegisterGraph(ctx, b) })
		wg.Wait()
		if errs[0] == nil {
			assert.ErrorIs(t, errs[1], sdk.ErrKindTaken, "round %d", round)
		} else {
			assert.ErrorIs(t, errs[0], sdk.ErrKindTaken, "round %d", round)
			assert.NoError(t, errs[1], "round %d", round)
		}
	}
}
