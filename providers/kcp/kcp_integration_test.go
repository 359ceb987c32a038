//go:build integration

package kcp_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/kcp"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	wait = 90 * time.Second
	tick = 200 * time.Millisecond
)

var (
	server *fgtesting.KCP
	root   = logicalcluster.NewPath("root")

	widgets = schema.GroupVersionResource{Group: "example.dev", Version: "v1", Resource: "widgets"}
	crds    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// kcpStart bounds kcp's start: it bootstraps its root workspace on the
// CPU, which takes ~30 s on an idle 2-core machine and minutes on a busy one.
const kcpStart = 8 * time.Minute

func TestMain(m *testing.M) {
	if os.Getenv("FLEETGRAPH_TEST_LOGS") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		log.SetLogger(logr.Discard())
	}
	start := time.Now()
	k, err := fgtesting.NewKCP(fgtesting.KCPOptions{StartTimeout: kcpStart})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "kcp ready in %s\n", time.Since(start).Round(time.Millisecond))
	server = k
	code := m.Run()
	if err := k.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

func TestWorkspacesAreEngagedIsolatedAndDisengaged(t *testing.T) {
	org := createWorkspace(t, root, "org")
	p, err := kcp.New(server.Config, org, kcp.Options{ClusterOptions: []cluster.Option{withScheme}})
	require.NoError(t, err)
	rec := startProvider(t, p)

	a := createWorkspace(t, org, "a")
	b := createWorkspace(t, org, "b")
	aName, bName := clusterOf(t, org, "a"), clusterOf(t, org, "b")

	for name, path := range map[logicalcluster.Name]logicalcluster.Path{aName: a, bName: b} {
		require.Eventually(t, func() bool { return rec.current(name) != nil }, wait, tick, "%s engaged", path)
		assert.Equal(t, path, p.Path(multicluster.ClusterName(name)))
		assert.Equal(t, server.ConfigFor(name.Path()).Host, rec.current(name).host)
	}

	// A CRD and an object applied through a's cluster land in a only.
	cl, err := p.Get(t.Context(), multicluster.ClusterName(aName))
	require.NoError(t, err)
	require.NoError(t, cl.GetClient().Create(t.Context(), widgetCRD()))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, cl.GetClient().Create(t.Context(), widget("w1")))
	}, wait, tick, "the CRD is served in a")
	_, err = dyn(a).Resource(widgets).Get(t.Context(), "w1", metav1.GetOptions{})
	assert.NoError(t, err, "the widget is in workspace a")
	_, err = dyn(b).Resource(crds).Get(t.Context(), "widgets.example.dev", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the CRD is not in workspace b: %v", err)

	// Deleting a disengages it; b stays.
	engagedA := rec.current(aName)
	require.NoError(t, server.DeleteWorkspace(t.Context(), org, "a"))
	require.Eventually(t, func() bool { return engagedA.ctx.Err() != nil }, wait, tick, "a disengaged")
	_, err = p.Get(t.Context(), multicluster.ClusterName(aName))
	assert.ErrorIs(t, err, multicluster.ErrClusterNotFound)
	assert.NotNil(t, rec.current(bName))
	assert.Equal(t, []multicluster.ClusterName{multicluster.ClusterName(bName)}, p.ClusterNames())
}

func TestRecursiveEngagesTheWholeTree(t *testing.T) {
	tree := createWorkspace(t, root, "tree")
	p, err := kcp.New(server.Config, tree, kcp.Options{Recursive: true})
	require.NoError(t, err)
	rec := startProvider(t, p)

	child := createWorkspace(t, tree, "child")
	createWorkspace(t, child, "grandchild")
	childName, grandName := clusterOf(t, tree, "child"), clusterOf(t, child, "grandchild")

	require.Eventually(t, func() bool { return rec.current(childName) != nil && rec.current(grandName) != nil }, wait, tick)
	assert.Equal(t, child.Join("grandchild"), p.Path(multicluster.ClusterName(grandName)))

	grand := rec.current(grandName)
	require.NoError(t, server.DeleteWorkspace(t.Context(), child, "grandchild"))
	require.Eventually(t, func() bool { return grand.ctx.Err() != nil }, wait, tick, "grandchild disengaged")
	assert.NotNil(t, rec.current(childName))
}

func TestNonRecursiveIgnoresGrandchildren(t *testing.T) {
	flat := createWorkspace(t, root, "flat")
	child := createWorkspace(t, flat, "child")
	createWorkspace(t, child, "grandchild")
	childName, grandName := clusterOf(t, flat, "child"), clusterOf(t, child, "grandchild")
	p, err := kcp.New(server.ConfigFor(root), flat, kcp.Options{})
	require.NoError(t, err)
	rec := startProvider(t, p)

	require.Eventually(t, func() bool { return rec.current(childName) != nil }, wait, tick, "existing child engaged")
	assert.Nil(t, rec.current(grandName))
	assert.Equal(t, []multicluster.ClusterName{multicluster.ClusterName(childName)}, p.ClusterNames())
}

// engagement is one Engage call seen by the recorder.
type engagement struct {
	ctx  context.Context
	host string
}

// recorder is a multicluster.Aware that records Engage calls.
type recorder struct {
	mu     sync.Mutex
	byName map[multicluster.ClusterName][]*engagement
}

func (r *recorder) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byName[name] = append(r.byName[name], &engagement{ctx: ctx, host: cl.GetConfig().Host})
	return nil
}

// current returns the latest engagement of name if its context is live.
func (r *recorder) current(name logicalcluster.Name) *engagement {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.byName[multicluster.ClusterName(name)]
	if len(all) == 0 || all[len(all)-1].ctx.Err() != nil {
		return nil
	}
	return all[len(all)-1]
}

// startProvider runs p with a recorder until the test ends.
func startProvider(t *testing.T, p multicluster.ProviderRunnable) *recorder {
	t.Helper()
	rec := &recorder{byName: map[multicluster.ClusterName][]*engagement{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx, rec) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(wait):
			t.Errorf("provider did not stop")
		}
	})
	return rec
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	return s
}()

func withScheme(o *cluster.Options) { o.Scheme = scheme }

func createWorkspace(t *testing.T, parent logicalcluster.Path, name string) logicalcluster.Path {
	t.Helper()
	_, err := server.CreateWorkspace(t.Context(), parent, name)
	require.NoError(t, err)
	return parent.Join(name)
}

// clusterOf returns the logical cluster name of the workspace name in parent.
func clusterOf(t *testing.T, parent logicalcluster.Path, name string) logicalcluster.Name {
	t.Helper()
	ws, err := dyn(parent).Resource(fgtesting.WorkspacesGVR).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	c, _, _ := unstructured.NestedString(ws.Object, "spec", "cluster")
	require.NotEmpty(t, c)
	return logicalcluster.Name(c)
}

func dyn(path logicalcluster.Path) dynamic.Interface {
	return dynamic.NewForConfigOrDie(server.ConfigFor(path))
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	gvk := schema.GroupVersionKind{Group: "example.dev", Version: "v1", Kind: "Widget"}
	return fgtesting.NewCRD(gvk, "widgets", apiextensionsv1.ClusterScoped)
}

func widget(name string) client.Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.dev/v1")
	u.SetKind("Widget")
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, "blue", "spec", "color")
	return u
}

var (
	apiResourceSchemas = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiresourceschemas"}
	apiExports         = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apiexports"}
	apiBindings        = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apibindings"}
	endpointSlices     = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiexportendpointslices"}
)

func TestAPIExportConsumersAreEngagedIsolatedAndDisengaged(t *testing.T) {
	provider := createWorkspace(t, root, "widget-provider")
	exportWidgets(t, provider)
	one := createWorkspace(t, root, "consumer-one")
	two := createWorkspace(t, root, "consumer-two")
	oneName, twoName := clusterOf(t, root, "consumer-one"), clusterOf(t, root, "consumer-two")

	p, err := kcp.NewAPIExport(server.ConfigFor(provider), "widgets", kcp.APIExportOptions{})
	require.NoError(t, err)
	rec := startProvider(t, p)
	bindWidgets(t, one, provider)
	bindWidgets(t, two, provider)

	require.Eventually(t, func() bool { return rec.current(oneName) != nil && rec.current(twoName) != nil },
		wait, tick, "both consumers engaged")

	// An object created through consumer one's cluster lands in one only.
	cl, err := p.Get(t.Context(), multicluster.ClusterName(oneName))
	require.NoError(t, err)
	require.NoError(t, cl.GetClient().Create(t.Context(), widget("w1")))
	_, err = dyn(one).Resource(widgets).Get(t.Context(), "w1", metav1.GetOptions{})
	assert.NoError(t, err, "the widget is in consumer one")
	_, err = dyn(two).Resource(widgets).Get(t.Context(), "w1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the widget is not in consumer two: %v", err)

	// Removing the binding disengages the consumer; the other stays.
	engagedOne := rec.current(oneName)
	require.NoError(t, dyn(one).Resource(apiBindings).Delete(t.Context(), "widgets", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return engagedOne.ctx.Err() != nil }, wait, tick, "consumer one disengaged")
	_, err = p.Get(t.Context(), multicluster.ClusterName(oneName))
	assert.ErrorIs(t, err, multicluster.ErrClusterNotFound)
	assert.NotNil(t, rec.current(twoName))
}

// exportWidgets publishes example.dev/v1 Widget from the provider workspace
// as an APIResourceSchema and an APIExport called widgets, and waits for
// kcp to create its APIExportEndpointSlice.
func exportWidgets(t *testing.T, provider logicalcluster.Path) {
	t.Helper()
	ars := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
		"metadata": map[string]any{"name": "v1.widgets.example.dev"},
		"spec": map[string]any{
			"group": "example.dev", "scope": "Cluster",
			"names": map[string]any{"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
			}},
		},
	}}
	_, err := dyn(provider).Resource(apiResourceSchemas).Create(t.Context(), ars, metav1.CreateOptions{})
	require.NoError(t, err)
	export := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
		"metadata": map[string]any{"name": "widgets"},
		"spec": map[string]any{"resources": []any{map[string]any{
			"group": "example.dev", "name": "widgets", "schema": "v1.widgets.example.dev",
			"storage": map[string]any{"crd": map[string]any{}},
		}}},
	}}
	_, err = dyn(provider).Resource(apiExports).Create(t.Context(), export, metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := dyn(provider).Resource(endpointSlices).Get(t.Context(), "widgets", metav1.GetOptions{})
		assert.NoError(c, err)
	}, wait, tick, "kcp creates the APIExportEndpointSlice")
}

// bindWidgets binds the provider's widgets export in consumer and waits for
// the binding to be Ready.
func bindWidgets(t *testing.T, consumer, provider logicalcluster.Path) {
	t.Helper()
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
		"metadata": map[string]any{"name": "widgets"},
		"spec": map[string]any{"reference": map[string]any{"export": map[string]any{
			"path": provider.String(), "name": "widgets",
		}}},
	}}
	_, err := dyn(consumer).Resource(apiBindings).Create(t.Context(), binding, metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := dyn(consumer).Resource(apiBindings).Get(t.Context(), "widgets", metav1.GetOptions{})
		if !assert.NoError(c, err) {
			return
		}
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		assert.Equal(c, "Bound", phase)
	}, wait, tick, "binding in %s is bound", consumer)
}
