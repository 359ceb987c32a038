//go:build integration

package sdk_test

import (
	"context"
	"net/http"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// What the hub-graph tests (hubgraph_*_integration_test.go) share. A test
// runs its hub graphs in one of two places:
//
//   - a fleet of its own (startHubGraphFleet): a hub and three spokes that
//     the secret provider engages from kubeconfig Secrets on the hub, for a
//     test that freezes, removes or relabels a spoke, restarts its Hub, or
//     targets a cluster by its Secret;
//   - a Hub of its own on the package's shared fleet (startSharedHubGraph),
//     for a test that needs two spokes and nothing else of them; it may
//     count the requests its Hub makes (requestCounts).
//
// The polls keep the package's deadline (wait) and tick.

// hubGraphFleet is a hub and three spokes engaged from kubeconfig Secrets;
// spoke-1 and spoke-2 are labelled mesh=true, which is the platform's
// allowed set, and spoke-3 is not.
type hubGraphFleet struct {
	fleet   *fgtesting.Fleet
	hub     client.Client
	spokes  map[string]client.Client
	clients map[string]client.Client // spokes and "hub"
}

// startHubGraphFleet starts a hubGraphFleet of the test's own and a Hub
// with opts on it, and registers graphs (RGD manifests) in that Hub. stop
// stops the Hub; the fleet stops at the end of the test.
func startHubGraphFleet(t *testing.T, opts sdk.Options, graphs ...string) (f *hubGraphFleet, h *sdk.Hub, stop func()) {
	t.Helper()
	fleet := fgtesting.StartFleet(t, 3) // its own: the secret provider engages every kubeconfig Secret on its hub cluster
	ctx := context.Background()
	f = &hubGraphFleet{fleet: fleet, hub: newClient(t, fleet.Hub.Config), spokes: map[string]client.Client{}, clients: map[string]client.Client{}}
	h, stop = f.startHub(t, opts)
	require.NoError(t, f.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}))
	for _, s := range fleet.Spokes() {
		l := map[string]string{secret.DefaultSecretLabel: "true"}
		if s.Name != "spoke-3" {
			l[secret.LabelPrefix+"mesh"] = "true"
		}
		require.NoError(t, f.hub.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: secret.DefaultNamespace, Name: s.Name, Labels: l},
			Data:       map[string][]byte{secret.DefaultDataKey: s.Kubeconfig},
		}))
		f.spokes[s.Name] = newClient(t, s.Config)
		f.clients[s.Name] = f.spokes[s.Name]
	}
	f.clients["hub"] = f.hub
	registerGraphs(t, h, graphs...)
	return f, h, stop
}

// startHub runs a new Hub with the secret provider on the fleet's hub
// cluster until stop or the end of the test.
func (f *hubGraphFleet) startHub(t *testing.T, opts sdk.Options) (h *sdk.Hub, stop func()) {
	t.Helper()
	h, err := sdk.NewHub(secret.New(secret.Options{Safety: secret.Safety{AllowLoopback: true}}), opts)
	require.NoError(t, err)
	return h, fgtesting.StartStoppable(t, func(ctx context.Context) error { return h.Run(ctx, f.fleet.Hub.Config) })
}

// registerGraphs registers each of graphs (RGD manifests) in h.
func registerGraphs(t *testing.T, h *sdk.Hub, graphs ...string) {
	t.Helper()
	for _, g := range graphs {
		require.NoError(t, h.RegisterGraph(context.Background(), rgdFromString(t, g)))
	}
}

// meshOnly are the options of a Hub that allows the clusters labelled
// mesh=true as targets, RGD controller off.
func meshOnly() sdk.Options {
	return sdk.Options{
		Targets: sdk.TargetOptions{AllowedClusters: &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "true"}}},
		RGDs:    sdk.RGDOptions{DisableController: true},
	}
}

// freeze stops the API server of the spoke named cluster until its Resume
// or the end of the test.
func (f *hubGraphFleet) freeze(t *testing.T, cluster string) *fgtesting.Cluster {
	t.Helper()
	frozen := f.fleet.Spoke(cluster)
	require.NoError(t, frozen.Pause())
	t.Cleanup(func() { _ = frozen.Resume() })
	return frozen
}

// removeKubeconfig deletes the kubeconfig Secret of cluster from the hub,
// so that the cluster leaves the fleet, and returns it as it was read.
func (f *hubGraphFleet) removeKubeconfig(t *testing.T, cluster string) *corev1.Secret {
	t.Helper()
	ctx := context.Background()
	kubeconfig := &corev1.Secret{}
	require.NoError(t, f.hub.Get(ctx, client.ObjectKey{Namespace: secret.DefaultNamespace, Name: cluster}, kubeconfig))
	require.NoError(t, f.hub.Delete(ctx, kubeconfig))
	return kubeconfig
}

// createLink creates the Link default/name whose egress goes to the
// cluster egress, once the Link kind is served.
func (f *hubGraphFleet) createLink(t *testing.T, name, egress string) {
	t.Helper()
	createWhenServed(t, f.hub, instance(linkGVK, name, map[string]any{"egressCluster": egress}))
}

// activeLink creates a Link as createLink does and waits until it is
// ACTIVE.
func (f *hubGraphFleet) activeLink(t *testing.T, name, egress string) {
	t.Helper()
	f.createLink(t, name, egress)
	requireState(t, f.hub, linkGVK, name, "ACTIVE")
}

// link is the Link default/name on the hub, or nil if it cannot be read.
func (f *hubGraphFleet) link(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(linkGVK)
	if err := f.hub.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u); err != nil {
		return nil
	}
	return u
}

// setLinkSpec sets spec.field of the Link default/name to value, retrying
// on conflicts.
func (f *hubGraphFleet) setLinkSpec(t *testing.T, name, field, value string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := f.link(name)
		require.NotNil(ct, u)
		require.NoError(ct, unstructured.SetNestedField(u.Object, value, "spec", field))
		require.NoError(ct, f.hub.Update(context.Background(), u))
	}, wait, tick)
}

// requireLinkGone waits up to within for the Link default/name to be gone
// from the hub.
func (f *hubGraphFleet) requireLinkGone(t *testing.T, name string, within time.Duration, msgAndArgs ...any) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Nil(ct, f.link(name))
	}, within, tick, msgAndArgs...)
}

// deleteLink deletes a hub instance and waits until it is gone.
func (f *hubGraphFleet) deleteLink(t *testing.T, name string) {
	t.Helper()
	u := f.link(name)
	require.NotNil(t, u)
	require.NoError(t, client.IgnoreNotFound(f.hub.Delete(context.Background(), u)))
	f.requireLinkGone(t, name, wait, "deleting %s", name)
}

// configMap reads the ConfigMap default/name in cluster ("hub" or a
// spoke's name).
func (f *hubGraphFleet) configMap(cluster, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := f.clients[cluster].Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, cm)
	return cm, err
}

// assertNoConfigMap asserts that cluster holds no ConfigMap default/name;
// why says what that shows, and the read's error follows it.
func (f *hubGraphFleet) assertNoConfigMap(t assert.TestingT, cluster, name, why string) bool {
	_, err := f.configMap(cluster, name)
	return assert.True(t, apierrors.IsNotFound(err), "%s: %v", why, err)
}

// updateConfigMap applies change to the ConfigMap default/name in cluster
// and writes it back, retrying on conflicts.
func (f *hubGraphFleet) updateConfigMap(t *testing.T, cluster, name string, change func(cm *corev1.ConfigMap)) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cm, err := f.configMap(cluster, name)
		require.NoError(ct, err)
		change(cm)
		require.NoError(ct, f.clients[cluster].Update(context.Background(), cm))
	}, wait, tick)
}

// children lists the ConfigMaps in cluster, in every namespace, labelled
// as children of graph.
func (f *hubGraphFleet) children(t require.TestingT, cluster, graph string) []corev1.ConfigMap {
	list := &corev1.ConfigMapList{}
	require.NoError(t, f.clients[cluster].List(context.Background(), list, client.MatchingLabels{"fleetgraph.dev/graph": graph}))
	return list.Items
}

// requireData waits until the named ConfigMap in cluster has data.
func (f *hubGraphFleet) requireData(t *testing.T, cluster, name string, data map[string]string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cm, err := f.configMap(cluster, name)
		require.NoError(ct, err)
		assert.Equal(ct, data, cm.Data)
	}, wait, tick, "%s in %s", name, cluster)
}

// requireNowhere checks that no ConfigMap named after the instance exists
// in any cluster.
func (f *hubGraphFleet) requireNowhere(t *testing.T, instance string) {
	t.Helper()
	for cluster, c := range f.clients {
		list := &corev1.ConfigMapList{}
		require.NoError(t, c.List(context.Background(), list))
		for _, cm := range list.Items {
			assert.False(t, strings.HasPrefix(cm.Name, instance+"-"), "%s/%s was written in %s", cm.Namespace, cm.Name, cluster)
		}
	}
}

// condition is the condition of type typ in u's status, or nil.
func condition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// instanceSays is what a test waits for an instance's status to say: its
// state and one of its conditions.
type instanceSays struct {
	// State is status.state. Not checked when empty.
	State string
	// Condition is the type of the condition checked.
	Condition string
	// Status is the condition's status. Not checked when empty.
	Status string
	// Reason is the condition's reason. Not checked when empty.
	Reason string
	// Message are strings the condition's message contains.
	Message []string
	// Also checks more of the same read of the instance. Defaults to
	// nothing more.
	Also func(ct *assert.CollectT, u *unstructured.Unstructured)
}

// requireSays waits until the instance default/name of kind gvk on c says
// want, and returns the instance as it was read then.
func requireSays(t *testing.T, c client.Client, gvk schema.GroupVersionKind, name string, want instanceSays, msgAndArgs ...any) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		require.NoError(ct, c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u))
		last = u
		if want.State != "" {
			s, _, _ := unstructured.NestedString(u.Object, "status", "state")
			assert.Equal(ct, want.State, s)
		}
		cond := condition(u, want.Condition)
		require.NotNil(ct, cond, "condition %s", want.Condition)
		if want.Status != "" {
			assert.Equal(ct, want.Status, cond["status"])
		}
		if want.Reason != "" {
			assert.Equal(ct, want.Reason, cond["reason"])
		}
		for _, s := range want.Message {
			assert.Contains(ct, cond["message"], s)
		}
		if want.Also != nil {
			want.Also(ct, u)
		}
	}, wait, tick, msgAndArgs...)
	return last
}

// sharedHubGraph is a Hub of the test's own on the package's shared fleet
// (sharedFleet), with clients of the hub cluster and of each spoke.
type sharedHubGraph struct {
	h      *sdk.Hub
	hub    client.Client
	spokes map[string]client.Client
}

// startSharedHubGraph runs a Hub with opts on the shared fleet until the
// end of the test. The Hub reaches each cluster through wrap(the
// cluster's config, its name), "hub" naming the hub cluster; wrap nil
// leaves the configs as they are. The test's clients are not wrapped.
func startSharedHubGraph(t *testing.T, opts sdk.Options, wrap func(cfg *rest.Config, cluster string) *rest.Config) *sharedHubGraph {
	t.Helper()
	if wrap == nil {
		wrap = func(cfg *rest.Config, _ string) *rest.Config { return cfg }
	}
	fleet := sharedFleet(t)
	provider := fgtesting.NewProvider()
	s := &sharedHubGraph{hub: newClient(t, fleet.Hub.Config), spokes: map[string]client.Client{}}
	for _, sp := range fleet.Spokes() {
		require.NoError(t, provider.AddConfig(context.Background(), sp.Name, wrap(sp.Config, sp.Name)))
		s.spokes[sp.Name] = newClient(t, sp.Config)
	}
	s.h = startHub(t, wrap(fleet.Hub.Config, "hub"), provider, opts)
	return s
}

// createNamespace creates the namespace ns on the hub cluster and on
// every spoke, where it is not yet.
func (s *sharedHubGraph) createNamespace(t *testing.T, ns string) {
	t.Helper()
	for _, c := range append([]client.Client{s.hub}, s.spokes["spoke-1"], s.spokes["spoke-2"]) {
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	}
}

// requestCounts counts the requests made through the configs it wraps
// whose method it counts, by cluster and URL path: one path per object
// (and one per subresource).
type requestCounts struct {
	counts func(method string) bool
	mu     sync.Mutex
	n      map[string]int
}

// countReads counts GETs.
func countReads() *requestCounts {
	return &requestCounts{counts: func(m string) bool { return m == http.MethodGet }, n: map[string]int{}}
}

// countWrites counts writes: PATCH, PUT, POST and DELETE.
func countWrites() *requestCounts {
	return &requestCounts{counts: func(m string) bool { return m != http.MethodGet }, n: map[string]int{}}
}

// config is a copy of cfg whose requests are counted for cluster.
func (r *requestCounts) config(cfg *rest.Config, cluster string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if r.counts(req.Method) {
				r.mu.Lock()
				r.n[cluster+" "+req.URL.Path]++
				r.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	}
	return cfg
}

// get is how many requests were counted for the path in cluster.
func (r *requestCounts) get(cluster, path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[cluster+" "+path]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
