//go:build integration

package spoke_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// everywhereRGD is a cluster-scoped graph whose instances write a
// ConfigMap into the namespace they name and bind a user to cluster-admin:
// what a tenant who may author RGDs would try.
const everywhereRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: everywhere
spec:
  schema:
    apiVersion: v1alpha1
    kind: Everywhere
    scope: Cluster
    spec:
      target: string
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-config
        namespace: ${schema.spec.target}
      data:
        owner: ${schema.metadata.name}
  - id: admin
    template:
      apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRoleBinding
      metadata:
        name: ${schema.metadata.name}-admin
      roleRef:
        apiGroup: rbac.authorization.k8s.io
        kind: ClusterRole
        name: cluster-admin
      subjects:
      - apiGroup: rbac.authorization.k8s.io
        kind: User
        name: ${schema.metadata.name}
`

// peekRGD reads a Secret by name from the namespace the spec names and
// copies a value of it into a ConfigMap of the instance.
const peekRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: peek
spec:
  schema:
    apiVersion: v1alpha1
    kind: Peek
    spec:
      from: string
  resources:
  - id: creds
    externalRef:
      apiVersion: v1
      kind: Secret
      metadata:
        name: creds
        namespace: ${schema.spec.from}
  - id: copy
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-copy
      data:
        user: ${string(creds.data.user)}
`

// gatherRGD selects Secrets by label, naming no namespace, and counts
// them into a ConfigMap of the instance.
const gatherRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: gather
spec:
  schema:
    apiVersion: v1alpha1
    kind: Gather
    spec:
      unused: string | default="x"
  resources:
  - id: creds
    externalRef:
      apiVersion: v1
      kind: Secret
      metadata:
        selector:
          matchLabels:
            app: confinement-creds
  - id: copy
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-count
      data:
        count: ${string(size(creds))}
`

// asKro compiles rgdYAML renamed, so that an unconfined runtime serves it
// beside the confined one on the same spoke without the two meeting.
func asKro(t *testing.T, rgdYAML, name, kind string) *graph.Graph {
	return compile(t, strings.NewReplacer("name: "+name, "name: "+name+"-kro", "kind: "+kind, "kind: "+kind+"Kro").Replace(rgdYAML))
}

// runtimeOn starts a Runtime with opts on one cluster reached through cfg,
// engaged directly, and returns it with the log of its requests and a
// function that stops it (also called on cleanup).
func runtimeOn(t *testing.T, cfg *rest.Config, opts spoke.Config) (*spoke.Runtime, *requestLog, func()) {
	t.Helper()
	log := &requestLog{}
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log }
	cl, err := cluster.New(cfg, cacheopts.TrimCache)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	wg.Go(func() { _ = cl.Start(ctx) })
	require.True(t, cl.GetCache().WaitForCacheSync(ctx))
	rt := spoke.New(opts)
	wg.Go(func() { _ = rt.Start(ctx) })
	require.NoError(t, rt.Engage(ctx, "", cl))
	return rt, log, stop
}

// refusedOutside waits until the instance is in ERROR with reason
// OutsideNamespace and a Ready message containing want.
func refusedOutside(t *testing.T, c client.Client, g *graph.Graph, ns, name, want string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		u, err := getInstance(t, c, g, ns, name)
		if err != nil {
			return false, err.Error()
		}
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		reason := ""
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cond := range conds {
			if m, ok := cond.(map[string]any); ok && m["type"] == contract.ConditionReady {
				reason, _ = m["reason"].(string)
			}
		}
		msg := readyMessage(u)
		return state == contract.StateError && reason == "OutsideNamespace" && strings.Contains(msg, want),
			fmt.Sprintf("state %s, Ready reason %s, message %q", state, reason, msg)
	})
}

func absent(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopy())
	assert.True(t, apierrors.IsNotFound(err), "%s %s must not be written (%v)", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
}

func clusterRoleBinding(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("rbac.authorization.k8s.io/v1")
	u.SetKind("ClusterRoleBinding")
	u.SetName(name)
	return u
}

func createSecret(t *testing.T, c client.Client, ns, name, user string, labels map[string]string) {
	t.Helper()
	s := &unstructured.Unstructured{Object: map[string]any{"stringData": map[string]any{"user": user}}}
	s.SetAPIVersion("v1")
	s.SetKind("Secret")
	s.SetNamespace(ns)
	s.SetName(name)
	s.SetLabels(labels)
	require.NoError(t, c.Create(context.Background(), s))
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestConfinementHolds runs, on one spoke, a Runtime with
// ConfineToNamespace and one without (kro's behaviour), each serving its
// own copies of the graphs, against the two holes of issue 23: a
// cluster-scoped graph, and externalRefs reading another namespace.
func TestConfinementHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := sharedFleet(t).Spokes()[0].Config
	c := newClient(t, cfg)
	const team, victim = "holes-team", "holes-victim"
	for _, ns := range []string{team, victim} {
		createNamespace(t, c, ns)
	}
	createSecret(t, c, team, "creds", "team-user", map[string]string{"app": "confinement-creds"})
	createSecret(t, c, victim, "creds", "victim-user", map[string]string{"app": "confinement-creds"})

	everywhere, peek, gather := compile(t, everywhereRGD), compile(t, peekRGD), compile(t, gatherRGD)
	platform := compile(t, strings.NewReplacer("name: everywhere", "name: platform", "kind: Everywhere", "kind: Platform").Replace(everywhereRGD))
	everywhereKro, peekKro, gatherKro := asKro(t, everywhereRGD, "everywhere", "Everywhere"), asKro(t, peekRGD, "peek", "Peek"), asKro(t, gatherRGD, "gather", "Gather")
	for _, g := range []*graph.Graph{everywhere, peek, gather, platform, everywhereKro, peekKro, gatherKro} {
		installCRD(t, c, g)
	}
	confined, confinedLog, _ := runtimeOn(t, cfg, spoke.Config{Options: instance.Options{ConfineToNamespace: true, ClusterScopedGraphs: []string{"platform"}}})
	for _, g := range []*graph.Graph{everywhere, peek, gather, platform} {
		require.NoError(t, confined.Serve(spoke.Version{Graph: g}))
	}
	kro, _, _ := runtimeOn(t, cfg, spoke.Config{})
	for _, g := range []*graph.Graph{everywhereKro, peekKro, gatherKro} {
		require.NoError(t, kro.Serve(spoke.Version{Graph: g}))
	}

	t.Run("a cluster-scoped graph writes nothing", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(everywhere, "", "intruder", map[string]any{"target": victim})))
		refusedOutside(t, c, everywhere, "", "intruder",
			`config: ConfigMap `+victim+`/intruder-config would be outside the instance's namespace: the instance is cluster-scoped, and graph "everywhere" is not one of the cluster-scoped graphs allowed`)
		absent(t, c, configMapRef(victim, "intruder-config"))
		absent(t, c, clusterRoleBinding("intruder-admin"))
	})

	t.Run("a cluster-scoped graph the platform allows runs unconfined", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(platform, "", "tenant-setup", map[string]any{"target": team})))
		stateIs(t, c, platform, "", "tenant-setup", contract.StateActive)
		configMapData(t, c, team, "tenant-setup-config", "owner", "tenant-setup")
	})

	t.Run("an externalRef into another namespace reads nothing", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(peek, team, "thief", map[string]any{"from": victim})))
		refusedOutside(t, c, peek, team, "thief",
			fmt.Sprintf(`creds: Secret %[1]s/creds is in namespace %[1]q, outside the instance's namespace %[2]q`, victim, team))
		absent(t, c, configMapRef(team, "thief-copy"))

		require.NoError(t, c.Create(ctx, newInstance(peek, team, "own", map[string]any{"from": team})))
		stateIs(t, c, peek, team, "own", contract.StateActive)
		configMapData(t, c, team, "own-copy", "user", b64("team-user"))
	})

	t.Run("a selector without a namespace selects in the instance's namespace", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(gather, team, "all", map[string]any{})))
		stateIs(t, c, gather, team, "all", contract.StateActive)
		configMapData(t, c, team, "all-count", "count", "1")
	})

	t.Run("the confined runtime never asked for another namespace's Secrets", func(t *testing.T) {
		requests := confinedLog.matching("secrets")
		require.NotEmpty(t, requests, "the team's own Secrets are read")
		for _, r := range requests {
			assert.Contains(t, r, "/namespaces/"+team+"/secrets", "every Secret request stays in the instance's namespace")
		}
	})

	t.Run("without the option, as kro", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(everywhereKro, "", "anywhere", map[string]any{"target": victim})))
		stateIs(t, c, everywhereKro, "", "anywhere", contract.StateActive)
		configMapData(t, c, victim, "anywhere-config", "owner", "anywhere")
		require.NoError(t, c.Get(ctx, types.NamespacedName{Name: "anywhere-admin"}, clusterRoleBinding("anywhere-admin")))

		require.NoError(t, c.Create(ctx, newInstance(peekKro, team, "reader", map[string]any{"from": victim})))
		stateIs(t, c, peekKro, team, "reader", contract.StateActive)
		configMapData(t, c, team, "reader-copy", "user", b64("victim-user"))

		require.NoError(t, c.Create(ctx, newInstance(gatherKro, team, "every", map[string]any{})))
		stateIs(t, c, gatherKro, team, "every", contract.StateActive)
		configMapData(t, c, team, "every-count", "count", "2")
	})

	t.Run("an instance made before the option was turned on can still be deleted", func(t *testing.T) {
		legacy := compile(t, strings.NewReplacer("name: everywhere", "name: legacy", "kind: Everywhere", "kind: Legacy").Replace(everywhereRGD))
		installCRD(t, c, legacy)
		before, _, stopBefore := runtimeOn(t, cfg, spoke.Config{})
		require.NoError(t, before.Serve(spoke.Version{Graph: legacy}))
		require.NoError(t, c.Create(ctx, newInstance(legacy, "", "old", map[string]any{"target": victim})))
		stateIs(t, c, legacy, "", "old", contract.StateActive)
		configMapData(t, c, victim, "old-config", "owner", "old")
		stopBefore()

		after, _, _ := runtimeOn(t, cfg, spoke.Config{Options: instance.Options{ConfineToNamespace: true}})
		require.NoError(t, after.Serve(spoke.Version{Graph: legacy}))
		refusedOutside(t, c, legacy, "", "old", "config: ConfigMap "+victim+"/old-config would be outside the instance's namespace")
		deleteInstance(t, c, legacy, "", "old")
		gone(t, c, victim, "old-config") // its own child, deleted with it
	})
}
