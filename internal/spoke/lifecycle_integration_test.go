//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// chainRGD: first -> second -> third (a chain, so three deletion waves),
// plus "extra" behind includeWhen and "items" expanded by forEach.
const chainRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: chain
spec:
  schema:
    apiVersion: v1alpha1
    kind: Chain
    spec:
      value: string | default="a"
      withExtra: boolean | default=true
      items: "[]string"
    status:
      firstName: ${first.metadata.name}
  resources:
  - id: first
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-first
      data:
        value: ${schema.spec.value}
  - id: second
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-second
      data:
        from: ${first.data.value}
  - id: third
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-third
      data:
        from: ${second.data.from}
  - id: extra
    includeWhen:
    - ${schema.spec.withExtra}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-extra
      data:
        value: ${schema.spec.value}
  - id: entries
    forEach:
    - name: ${schema.spec.items}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-item-${name}
      data:
        item: ${name}
`

func TestInstanceLifecycle(t *testing.T) {
	t.Parallel()
	fleet := sharedFleet(t)
	g := compile(t, chainRGD)
	s := fleet.Spokes()[0]
	c := newClient(t, s.Config)
	installCRD(t, c, g)
	provider, clusters := providerFor(t, "chain", []*fgtesting.Cluster{s})
	rt := startRuntime(t, fleet, provider, spoke.Config{})
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))

	t.Run("stamped by the runtime", func(t *testing.T) {
		lifecycle(t, s.Config, clusters[0], rt, c, g, "chain", false)
	})
	installAdmissionPolicy(t, c, g, map[string]any{})
	t.Run("stamped at admission", func(t *testing.T) {
		lifecycle(t, s.Config, clusters[0], rt, c, g, "chain-stamped", true)
	})
}

// lifecycle takes one instance in ns through its whole life, on the
// spoke spokeCfg reaches, which rt serves as cluster. With admission, the
// admission policy is installed and the instance must come back from its
// create with the finalizer and child kinds already set.
func lifecycle(t *testing.T, spokeCfg *rest.Config, cluster multicluster.ClusterName, rt *spoke.Runtime, c client.Client, g *graph.Graph, ns string, admission bool) {
	ctx := context.Background()
	createNamespace(t, c, ns)
	inst := newInstance(g, ns, "demo", map[string]any{"value": "a", "items": []any{"x", "y"}})
	require.NoError(t, c.Create(ctx, inst))
	if admission {
		assert.Contains(t, inst.GetFinalizers(), contract.Finalizer, "stamped in the create request")
		assert.Equal(t, "v1/ConfigMap", inst.GetAnnotations()[contract.AnnotationChildKinds])
	}

	t.Run("creating an instance creates its children with our labels and status", func(t *testing.T) {
		stateIs(t, c, g, ns, "demo", contract.StateActive)
		configMapData(t, c, ns, "demo-third", "from", "a")
		configMapData(t, c, ns, "demo-extra", "value", "a")
		configMapData(t, c, ns, "demo-item-x", "item", "x")
		configMapData(t, c, ns, "demo-item-y", "item", "y")
		cm, err := configMap(c, ns, "demo-second")
		require.NoError(t, err)
		l := cm.GetLabels()
		assert.Equal(t, g.Name, l[contract.LabelGraph])
		assert.Equal(t, "second", l[contract.LabelNodeID])
		assert.Equal(t, "demo", l[contract.LabelInstanceName])
		assert.Equal(t, ns, l[contract.LabelInstanceNamespace])
		assert.Equal(t, "fleetgraph", l[contract.LabelManagedBy])
		got, err := getInstance(t, c, g, ns, "demo")
		require.NoError(t, err)
		assert.Contains(t, got.GetFinalizers(), contract.Finalizer)
		assert.Equal(t, "v1/ConfigMap", got.GetAnnotations()[contract.AnnotationChildKinds])
		name, _, _ := unstructured.NestedString(got.Object, "status", "firstName")
		assert.Equal(t, "demo-first", name)
		assert.Equal(t, spoke.Count{Total: 1, Ready: 1, Confirmed: 1, Reconciled: 1, Counted: true}, rt.Counts(g.Name)[cluster])
	})

	t.Run("updating the instance updates every child down the chain", func(t *testing.T) {
		patchSpec(t, c, g, ns, "demo", `{"spec":{"value":"b"}}`)
		configMapData(t, c, ns, "demo-first", "value", "b")
		configMapData(t, c, ns, "demo-third", "from", "b")
	})

	t.Run("a child deleted by hand comes back", func(t *testing.T) {
		cm, err := configMap(c, ns, "demo-second")
		require.NoError(t, err)
		uid := cm.GetUID()
		require.NoError(t, c.Delete(ctx, cm))
		eventually(t, func() (bool, string) {
			cm, err := configMap(c, ns, "demo-second")
			if err != nil {
				return false, err.Error()
			}
			return cm.GetUID() != uid, "still the old object"
		})
	})

	t.Run("a child edited by hand is put back", func(t *testing.T) {
		require.NoError(t, c.Patch(ctx, configMapRef(ns, "demo-first"),
			client.RawPatch("application/merge-patch+json", []byte(`{"data":{"value":"drift"}}`))))
		configMapData(t, c, ns, "demo-first", "value", "b")
	})

	t.Run("includeWhen turning false prunes the child", func(t *testing.T) {
		patchSpec(t, c, g, ns, "demo", `{"spec":{"withExtra":false}}`)
		gone(t, c, ns, "demo-extra")
		stateIs(t, c, g, ns, "demo", contract.StateActive)
	})

	t.Run("forEach grows and shrinks", func(t *testing.T) {
		patchSpec(t, c, g, ns, "demo", `{"spec":{"items":["x","y","z"]}}`)
		configMapData(t, c, ns, "demo-item-z", "item", "z")
		patchSpec(t, c, g, ns, "demo", `{"spec":{"items":["z"]}}`)
		gone(t, c, ns, "demo-item-x")
		gone(t, c, ns, "demo-item-y")
		configMapData(t, c, ns, "demo-item-z", "item", "z")
	})

	t.Run("deleting the instance deletes children in reverse waves, then releases it", func(t *testing.T) {
		order := recordDeletions(t, spokeCfg, ns)
		// Hold the last wave with a finalizer of our own.
		require.NoError(t, c.Patch(ctx, configMapRef(ns, "demo-third"),
			client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":["test.fleetgraph.dev/hold"]}}`))))
		require.NoError(t, c.Delete(ctx, newInstance(g, ns, "demo", nil)))

		readyMessageMentions(t, c, g, ns, "demo", "demo-third")
		stateIs(t, c, g, ns, "demo", contract.StateDeleting)
		second, err := configMap(c, ns, "demo-second")
		require.NoError(t, err, "the second wave must wait for the first")
		assert.Nil(t, second.GetDeletionTimestamp())

		require.NoError(t, c.Patch(ctx, configMapRef(ns, "demo-third"),
			client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))))
		gone(t, c, ns, "demo-first")
		eventually(t, func() (bool, string) {
			_, err := getInstance(t, c, g, ns, "demo")
			return apierrors.IsNotFound(err), "instance still there"
		})
		got := order()
		require.Less(t, slices.Index(got, "demo-third"), slices.Index(got, "demo-second"), "deletions: %v", got)
		require.Less(t, slices.Index(got, "demo-second"), slices.Index(got, "demo-first"), "deletions: %v", got)
	})
}

func patchSpec(t testing.TB, c client.Client, g *graph.Graph, ns, name, patch string) {
	t.Helper()
	require.NoError(t, c.Patch(context.Background(), newInstance(g, ns, name, nil),
		client.RawPatch(types.MergePatchType, []byte(patch))))
}

func configMapRef(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// readyMessageMentions waits until the instance's Ready condition message
// contains want.
func readyMessageMentions(t testing.TB, c client.Client, g *graph.Graph, ns, name, want string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		u, err := getInstance(t, c, g, ns, name)
		if err != nil {
			return false, err.Error()
		}
		msg := readyMessage(u)
		return strings.Contains(msg, want), "Ready message: " + msg
	})
}

func readyMessage(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == contract.ConditionReady {
			s, _ := m["message"].(string)
			return s
		}
	}
	return ""
}

// recordDeletions watches ConfigMaps in ns and returns a function giving
// the names in the order the API server reported their deletion.
func recordDeletions(t testing.TB, cfg *rest.Config, ns string) func() []string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var names []string
	go func() {
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Deleted {
				mu.Lock()
				names = append(names, cm.Name)
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(names)
	}
}

// oneKindRGD has a ConfigMap; twoKindsRGD adds a Secret.
const oneKindRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: twokinds
spec:
  schema:
    apiVersion: v1alpha1
    kind: TwoKinds
    spec:
      value: string | default="a"
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-config
      data:
        value: ${schema.spec.value}
`

const twoKindsRGD = oneKindRGD + `  - id: secret
    template:
      apiVersion: v1
      kind: Secret
      metadata:
        name: ${schema.metadata.name}-secret
      stringData:
        value: ${schema.spec.value}
`

func TestDroppedKindIsPrunedAfterRestart(t *testing.T) {
	t.Parallel()
	fleet := sharedFleet(t)
	ctx := context.Background()
	const ns = "dropped"
	v1 := compileAs(t, twoKindsRGD, ns)
	s := fleet.Spokes()[0]
	c := newClient(t, s.Config)
	installCRD(t, c, v1)
	createNamespace(t, c, ns)

	provider, _ := providerFor(t, ns, []*fgtesting.Cluster{s})
	rt, stop := runRuntime(t, fleet, provider, spoke.Config{})
	t.Cleanup(stop)
	require.NoError(t, rt.Serve(spoke.Version{Graph: v1}))
	require.NoError(t, c.Create(ctx, newInstance(v1, ns, "demo", map[string]any{})))
	stateIs(t, c, v1, ns, "demo", contract.StateActive)
	secret := &corev1.Secret{}
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "demo-secret"}, secret))
	got, err := getInstance(t, c, v1, ns, "demo")
	require.NoError(t, err)
	assert.Equal(t, "v1/ConfigMap,v1/Secret", got.GetAnnotations()[contract.AnnotationChildKinds])
	stop()

	// A new process serves the next version, which has no Secret: nothing
	// in memory says the instance ever had one, only its child kinds do.
	v2 := compileAs(t, oneKindRGD, ns)
	require.Len(t, v2.Nodes, 1)
	provider2, _ := providerFor(t, ns, []*fgtesting.Cluster{s})
	rt2 := startRuntime(t, fleet, provider2, spoke.Config{})
	require.NoError(t, rt2.Serve(spoke.Version{Graph: v2}))
	eventually(t, func() (bool, string) {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "demo-secret"}, &corev1.Secret{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Secret still there (%v)", err)
	})
	configMapData(t, c, ns, "demo-config", "value", "a")
	stateIs(t, c, v2, ns, "demo", contract.StateActive)
}

const itemsRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: items
spec:
  schema:
    apiVersion: v1alpha1
    kind: Items
    spec:
      names: "[]string"
  resources:
  - id: entries
    forEach:
    - name: ${schema.spec.names}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-${name}
      data:
        name: ${name}
`

// applyLatency delays every server-side apply and records how many were in
// flight at once, so that overlapping applies are certain to be seen.
type applyLatency struct {
	next              http.RoundTripper
	mu                sync.Mutex
	inflight, maximum int
}

func (a *applyLatency) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.Contains(r.Header.Get("Content-Type"), "apply-patch") {
		return a.next.RoundTrip(r)
	}
	a.mu.Lock()
	a.inflight++
	a.maximum = max(a.maximum, a.inflight)
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.inflight--
		a.mu.Unlock()
	}()
	time.Sleep(100 * time.Millisecond) // simulated network latency, not synchronisation
	return a.next.RoundTrip(r)
}

func (a *applyLatency) max() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.maximum
}

func TestForEachItemsAreAppliedConcurrently(t *testing.T) {
	t.Parallel()
	const ns = "items"
	g := compile(t, itemsRGD)
	cfg := rest.CopyConfig(sharedFleet(t).Spokes()[0].Config)
	c := newClient(t, cfg)
	installCRD(t, c, g)
	createNamespace(t, c, ns)

	latency := &applyLatency{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { latency.next = rt; return latency }
	cl, err := cluster.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = cl.Start(ctx) })
	require.True(t, cl.GetCache().WaitForCacheSync(ctx))
	rt := spoke.New(spoke.Config{Options: instance.Options{ItemConcurrency: 3}})
	wg.Go(func() { _ = rt.Start(ctx) })
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	require.NoError(t, rt.Engage(ctx, "", cl))

	names := []any{"a", "b", "c", "d", "e", "f"}
	require.NoError(t, c.Create(ctx, newInstance(g, ns, "demo", map[string]any{"names": names})))
	stateIs(t, c, g, ns, "demo", contract.StateActive)
	for _, n := range names {
		configMapData(t, c, ns, "demo-"+n.(string), "name", n.(string))
	}
	// Serial applies would never overlap; unbounded ones would reach six.
	assert.GreaterOrEqual(t, latency.max(), 2, "the items are applied concurrently")
	assert.LessOrEqual(t, latency.max(), 3, "at most ItemConcurrency at a time")
}
