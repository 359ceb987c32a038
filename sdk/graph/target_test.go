package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

const targetSchema = `apiVersion: v1alpha1
kind: App
spec:
  name: string | default="app"
  egressCluster: string | default="spoke-2"`

// targetResources put db on a literal cluster, egress on one computed
// from the spec and reading db, and leave local to the RGD's default.
func targetResources() string {
	return "resources:\n" +
		cm("db", "target: {cluster: {name: spoke-1}}", "port: '5432'") +
		cm("egress", "target: {cluster: {name: '${schema.spec.egressCluster}'}}", "upstream: ${db.data.port}") +
		cm("local", "", "")
}

func TestTargetsMakeAHubGraph(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc(targetSchema, targetResources())), graph.Options{})
	require.NoError(t, err)
	require.True(t, g.IsHubGraph())
	assert.Equal(t, []string{"db", "egress"}, ids(g.Targets()))
	assert.Nil(t, g.Node("local").Target(), "a resource without a target stays in the instance's cluster")
	assert.Contains(t, g.Extensions, graph.Extension{ResourceID: "db", Path: "target", Feature: "target (a resource written in another cluster)"})

	ctx := context.Background()
	vals := graph.Values{"schema": instance("x", map[string]any{"name": "app", "egressCluster": "spoke-3"})}
	db, err := g.Node("db").ResolveTarget(ctx, vals, nil)
	require.NoError(t, err)
	assert.Equal(t, graph.ResolvedTarget{Cluster: "spoke-1"}, db)
	egress, err := g.Node("egress").ResolveTarget(ctx, vals, nil)
	require.NoError(t, err)
	assert.Equal(t, graph.ResolvedTarget{Cluster: "spoke-3", Computed: true}, egress)
	assert.True(t, g.Node("egress").Target().Computed())
	assert.Equal(t, []string{"db"}, g.Node("egress").Dependencies, "a value read across clusters orders the DAG")
}

func TestRGDTargetIsTheDefault(t *testing.T) {
	doc := rgdDoc(targetSchema, "target:\n  cluster: {kubeconfigSecretName: east, kubeconfigSecretNamespace: fleet}\n  allowedClusters: {matchLabels: {mesh: 'true'}}\n"+
		targetResources())
	g, err := graph.Compile(parseRGD(t, doc), graph.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"db", "egress", "local"}, ids(g.Targets()))
	local, err := g.Node("local").ResolveTarget(context.Background(), graph.Values{"schema": instance("x", nil)}, nil)
	require.NoError(t, err)
	assert.Equal(t, graph.ResolvedTarget{SecretName: "east", SecretNamespace: "fleet"}, local)
	assert.Equal(t, map[string]string{"mesh": "true"}, g.AllowedClusters().MatchLabels)
	assert.Contains(t, g.Extensions, graph.Extension{Path: "spec.target", Feature: "target (a resource written in another cluster)"})
}

func TestTargetRefusals(t *testing.T) {
	cases := map[string]struct {
		entry string
		want  error
		path  string
	}{
		"reads another resource": {"target: {cluster: {name: '${other.metadata.name}'}}", graph.ErrReference, "target.cluster.name"},
		"not a string":           {"target: {cluster: {name: '${1 + 1}'}}", graph.ErrType, "target.cluster.name"},
		"both forms":             {"target: {cluster: {name: a, kubeconfigSecretName: b, kubeconfigSecretNamespace: c}}", graph.ErrInvalid, "target.cluster"},
		"secret without ns":      {"target: {cluster: {kubeconfigSecretName: b}}", graph.ErrInvalid, "target.cluster"},
		"no cluster":             {"target: {}", graph.ErrInvalid, "target.cluster"},
		"allowed on a resource":  {"target: {cluster: {name: a}, allowedClusters: {}}", graph.ErrInvalid, "target.allowedClusters"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := rgdDoc(targetSchema, "resources:\n"+cm("other", "", "")+cm("res", tc.entry, ""))
			_, err := graph.Compile(parseRGD(t, doc), graph.Options{})
			require.ErrorIs(t, err, tc.want)
			var ge *graph.Error
			require.True(t, errors.As(err, &ge))
			assert.Equal(t, "res", ge.ResourceID)
			assert.Equal(t, tc.path, ge.Path)
		})
	}
}

func TestStrictRefusesTarget(t *testing.T) {
	_, err := graph.Compile(parseRGD(t, rgdDoc(targetSchema, targetResources())), graph.Options{Strict: true})
	require.ErrorIs(t, err, graph.ErrExtension)
	assert.Contains(t, err.Error(), "target")
}

// gatewayResources put one gateway in every cluster labelled mesh=true,
// each listing the others.
const gatewayResources = `resources:
- id: gateway
  forEach:
  - peer: ${fleet.clusters.filter(c, c.labels.?mesh.orValue("") == "true")}
  target: {cluster: {name: '${peer.name}'}}
  template:
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: ${schema.spec.name + "-" + peer.name}
    data:
      peers: ${fleet.clusters.filter(c, c.labels.?mesh.orValue("") == "true" && c.name != peer.name).map(c, c.name).join(",")}
`

func TestFleetFeedsForEachAndTarget(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc(targetSchema, gatewayResources)), graph.Options{})
	require.NoError(t, err)
	require.True(t, g.UsesFleet())
	assert.Contains(t, g.Extensions, graph.Extension{ResourceID: "gateway", Path: "forEach[0].peer", Feature: "the fleet variable"})
	fleet := graph.FleetValue([]graph.FleetCluster{
		{Name: "c", Labels: map[string]string{"mesh": "true"}}, {Name: "a", Labels: map[string]string{"mesh": "true"}}, {Name: "b"},
	})
	ctx := context.Background()
	vals := graph.Values{"schema": instance("x", map[string]any{"name": "gw"}), graph.VarFleet: fleet}
	n := g.Node("gateway")
	its, err := n.Iterations(ctx, vals)
	require.NoError(t, err)
	require.Len(t, its, 2)
	var got []string
	for _, it := range its {
		tg, err := n.ResolveTarget(ctx, vals, it)
		require.NoError(t, err)
		assert.True(t, tg.Computed)
		obj, err := n.Render(ctx, vals, it)
		require.NoError(t, err)
		got = append(got, tg.Cluster+":"+obj.Object["data"].(map[string]any)["peers"].(string))
	}
	assert.Equal(t, []string{"a:c", "c:a"}, got, "one per mesh cluster, by name, each listing the others")
}

func TestFleetRefusals(t *testing.T) {
	_, err := graph.Compile(parseRGD(t, rgdDoc(targetSchema, "resources:\n"+cm("a", "", "n: '${string(size(fleet.clusters))}'"))), graph.Options{})
	require.ErrorIs(t, err, graph.ErrInvalid)
	assert.Contains(t, err.Error(), "hub graphs")

	_, err = graph.Compile(parseRGD(t, rgdDoc(targetSchema, gatewayResources)), graph.Options{Strict: true})
	require.ErrorIs(t, err, graph.ErrExtension)

	readsOther := "resources:\n" + cm("other", "", "") + `- id: res
  forEach:
  - peer: ${[other.metadata.name]}
  target: {cluster: {name: '${peer}'}}
  template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${peer}'}}
`
	_, err = graph.Compile(parseRGD(t, rgdDoc(targetSchema, readsOther)), graph.Options{})
	require.ErrorIs(t, err, graph.ErrReference)
	assert.Contains(t, err.Error(), `not "other"`)
}

// sameName puts a ConfigMap called "gateway" under each given target.
func sameName(targets ...string) string {
	out := "resources:\n"
	for i, t := range targets {
		entry := ""
		if t != "" {
			entry = "target: {cluster: {name: '" + t + "'}}"
		}
		out += fmt.Sprintf("- id: gw%d\n", i)
		if entry != "" {
			out += "  " + entry + "\n"
		}
		out += "  template: {apiVersion: v1, kind: ConfigMap, metadata: {name: gateway}}\n"
	}
	return out
}

// The same name in two clusters is two objects; in one cluster, one.
func TestSameNameInDifferentTargetsIsTwoObjects(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc(targetSchema, sameName("spoke-1", "spoke-2", ""))), graph.Options{})
	require.NoError(t, err, "spoke-1, spoke-2 and the hub each hold their own gateway")
	assert.Empty(t, g.Warnings)

	for name, targets := range map[string][]string{
		"one literal cluster": {"spoke-1", "spoke-1"},
		"the same expression": {"${schema.spec.egressCluster}", "${ schema.spec.egressCluster }"},
		"both on the hub":     {"", ""},
	} {
		g, err := graph.Compile(parseRGD(t, rgdDoc(targetSchema, sameName(targets...))), graph.Options{})
		require.NoError(t, err, name)
		require.Len(t, g.Warnings, 1, name)
		assert.Contains(t, g.Warnings[0].Message, "renders the same object", name)
		if targets[0] != "" {
			assert.Contains(t, g.Warnings[0].Message, "in the same target cluster", name)
		}
	}
}

// An iterator that picks the cluster keeps a forEach's objects apart
// even when the name does not use it: one "gateway" per cluster.
func TestAnIteratorInTheTargetIdentifiesTheObject(t *testing.T) {
	perCluster := `resources:
- id: gateway
  forEach:
  - peer: ${fleet.clusters}
  target: {cluster: {name: '${peer.name}'}}
  template: {apiVersion: v1, kind: ConfigMap, metadata: {name: gateway}}
`
	_, err := graph.Compile(parseRGD(t, rgdDoc(targetSchema, perCluster)), graph.Options{})
	require.NoError(t, err)

	unused := strings.Replace(perCluster, "'${peer.name}'", "spoke-1", 1)
	_, err = graph.Compile(parseRGD(t, rgdDoc(targetSchema, unused)), graph.Options{})
	require.ErrorIs(t, err, graph.ErrInvalid)
	assert.Contains(t, err.Error(), `forEach iterator "peer" must be used in metadata.name, metadata.namespace or the target`)
}
