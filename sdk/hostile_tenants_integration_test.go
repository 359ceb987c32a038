//go:build integration && hostile

package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// This file runs issue 23's hostile corpus end to end: RGDs and instances a
// hostile tenant could write, through graph.Compile and through a real hub
// serving a real spoke with ConfineToNamespace on, while a benign tenant's
// instances are measured.

const (
	hostileGroup = "hostile.fleetgraph.dev"
	// hostileCaseBound is how long any case may take, from its create, to
	// be refused or to reach its outcome: generous for a 2-core machine
	// shared with other work, and far below what an unbounded case takes
	// (minutes, or the process's death).
	hostileCaseBound = 90 * time.Second
	// hostileRSSBound is the most the test process, which runs the hub,
	// may hold resident at any time of the run (issue 23's bound).
	hostileRSSBound = 512 << 20
	// benignP99Bound is the benign instances' reconcile latency at p99
	// (issue 23's bound), unless the load leaves the machine's own floor
	// above it (benignBound).
	benignP99Bound = time.Second
	// benignOverFloor is how far a benign instance's p99 may be from its
	// floor's, measured in the same run, where that floor is itself over
	// benignP99Bound.
	benignOverFloor = 2
	// platformGraph is the cluster-scoped graph the platform registers
	// from Go and lets run unconfined (Options.Instances.ClusterScopedGraphs).
	platformGraph = "platform-setup"
)

// hostileHubOptions is what a platform hosting mutually distrusting
// tenants sets (the README's "Hosting many tenants"): every other option,
// and every Limits field, at its default. It is the only place this file
// names Options fields.
func hostileHubOptions() sdk.Options {
	return sdk.Options{
		RGDs: sdk.RGDOptions{InstallCRD: true},
		Instances: spoke.Options{
			ConfineToNamespace:  true,
			ClusterScopedGraphs: []string{platformGraph},
		},
	}
}

func hostileGVK(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: hostileGroup, Version: "v1alpha1", Kind: kind}
}

// startHostileHub runs a hub with hostileHubOptions in a new manager on the
// hub cluster, serving provider, until the returned stop is called (or the
// test ends). platform, if not nil, is registered from Go before the
// manager starts, as a platform registers its own graphs.
func startHostileHub(t *testing.T, cfg *rest.Config, provider multicluster.Provider, platform *v1alpha1.ResourceGraphDefinition) (*sdk.Hub, func()) {
	t.Helper()
	h, err := sdk.NewHub(provider, hostileHubOptions())
	require.NoError(t, err)
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	if platform != nil {
		require.NoError(t, h.RegisterGraph(context.Background(), platform))
	}
	stop := fgtesting.StartStoppable(t, mgr.Start)
	c := newClient(t, cfg)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, c.List(context.Background(), &v1alpha1.ResourceGraphDefinitionList{}))
	}, wait, tick, "the hub installs the RGD CRD")
	return h, stop
}

// --- The RGDs. ---

func loadHostileRGD(t testing.TB, file string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	raw, err := os.ReadFile("testdata/hostile/" + file)
	require.NoError(t, err)
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(raw, rgd), file)
	return rgd
}

// rgdOf builds an RGD from plain maps, for the RGDs generated in Go.
func rgdOf(t testing.TB, name string, schemaDoc map[string]any, resources []any) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	schemaDoc["apiVersion"] = "v1alpha1"
	schemaDoc["group"] = hostileGroup
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"schema": schemaDoc, "resources": resources},
	})
	require.NoError(t, err)
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, json.Unmarshal(raw, rgd))
	return rgd
}

func configMapResource(id, name string, data map[string]any) map[string]any {
	tmpl := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}
	if data != nil {
		tmpl["data"] = data
	}
	return map[string]any{"id": id, "template": tmpl}
}

// longExpressionTail is about 100,000 characters of CEL (just under the
// CEL parser's limit), appended to an expression that fails.
var longExpressionTail = ` + size("` + strings.Repeat("a", 99_900) + `")`

// hostileEvalRGD is testdata/hostile/eval.yaml, plus a resource whose
// expression is 100,000 characters long and fails on every instance that
// includes it.
func hostileEvalRGD(t testing.TB) *v1alpha1.ResourceGraphDefinition {
	rgd := loadHostileRGD(t, "eval.yaml")
	long := configMapResource("longExpression", "${schema.metadata.name}-longexpression",
		map[string]any{"v": "${string(int(schema.spec.s)" + longExpressionTail + ")}"})
	long["includeWhen"] = []any{`${schema.spec.case == "longExpression"}`}
	raw, err := json.Marshal(long)
	require.NoError(t, err)
	var res v1alpha1.Resource
	require.NoError(t, json.Unmarshal(raw, &res))
	rgd.Spec.Resources = append(rgd.Spec.Resources, res)
	return rgd
}

// hostileWideRGD has 300 resources, each a forEach over lists.range of
// what the instance asks: 300,000 children for count 1000, where kro
// bounds each resource alone (1000).
func hostileWideRGD(t testing.TB) *v1alpha1.ResourceGraphDefinition {
	resources := []any{configMapResource("base", "${schema.metadata.name}-base", nil)}
	for i := range 300 {
		r := configMapResource(fmt.Sprintf("r%d", i), fmt.Sprintf(`${schema.metadata.name + "-r%d-" + string(i)}`, i), nil)
		r["forEach"] = []any{map[string]any{"i": "${lists.range(schema.spec.count)}"}}
		resources = append(resources, r)
	}
	return rgdOf(t, "hostile-wide", map[string]any{"kind": "HostileWide", "spec": map[string]any{"count": "integer | default=0"}}, resources)
}

// platformSetupRGD is the platform's own cluster-scoped graph: it writes a
// ConfigMap into the namespace its instance names.
func platformSetupRGD(t testing.TB) *v1alpha1.ResourceGraphDefinition {
	return rgdOf(t, platformGraph, map[string]any{"kind": "PlatformSetup", "scope": "Cluster", "spec": map[string]any{"target": "string"}},
		[]any{map[string]any{"id": "welcome", "template": map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "${schema.metadata.name}-welcome", "namespace": "${schema.spec.target}"},
		}}})
}

// servedRGDs are the graphs the corpus's instances run: each compiles.
func servedRGDs(t testing.TB) []*v1alpha1.ResourceGraphDefinition {
	return []*v1alpha1.ResourceGraphDefinition{
		hostileEvalRGD(t), loadHostileRGD(t, "volume.yaml"), hostileWideRGD(t),
		loadHostileRGD(t, "reach.yaml"), loadHostileRGD(t, "everywhere.yaml"), loadHostileRGD(t, "benign.yaml"),
	}
}

// --- The corpus. ---

// hostileCase is one entry of the corpus: an RGD that must be refused, or
// an instance of a served graph that must reach a given outcome.
type hostileCase struct {
	name  string
	class string
	// rgd, for a compile case, is refused by graph.Compile (a *graph.Error
	// whose message says each of says) and by the hub (GraphAccepted=False
	// saying the same).
	rgd func(testing.TB) *v1alpha1.ResourceGraphDefinition
	// kind, namespace and spec make the instance of an instance case; its
	// name is the case's, lowercased.
	kind, namespace string
	spec            map[string]any
	// reason is the Ready condition's reason the instance ends with, in
	// state ERROR (for a compile case, the GraphAccepted reason); "" means
	// the instance must become ACTIVE instead.
	reason string
	// says are fragments the message must contain: the resource id, the
	// expression or object, and the limit.
	says []string
	// oneOf, if set, are fragments of which the message must contain one:
	// the limits that may stop a case whose cost is counted as it runs
	// (which comes first, cost or time, depends on the machine's speed).
	oneOf []string
	// limitError: for a compile case, the error wraps graph.ErrLimit.
	limitError bool
	// hubOnly: for a compile case, the RGD compiles; the hub refuses it.
	hubOnly bool
	// maxMessage, if set, bounds the length in bytes of the message the
	// hub shows (a condition's).
	maxMessage int
	// check, if set, asserts what the case must (not) have written on the
	// spoke once it reached its outcome.
	check func(t *testing.T, spoke client.Client, name string)
}

func (hc hostileCase) instanceName() string { return strings.ToLower(hc.name) }

// sequence is the integers 0..n-1, as an instance's list.
func sequence(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// doublingTypes: T0 is a string, each next type two fields of the previous.
func doublingTypes(levels int) map[string]any {
	types := map[string]any{"T0": "string"}
	for i := 1; i < levels; i++ {
		prev := fmt.Sprintf("T%d", i-1)
		types[fmt.Sprintf("T%d", i)] = map[string]any{"a": prev, "b": prev}
	}
	return types
}

// nested is a map of the given depth around leaf.
func nested(depth int, key string, leaf any) any {
	for range depth {
		leaf = map[string]any{key: leaf}
	}
	return leaf
}

func compileCases() []hostileCase {
	simple := func(name, kind string, schemaDoc map[string]any, resources ...any) func(testing.TB) *v1alpha1.ResourceGraphDefinition {
		return func(t testing.TB) *v1alpha1.ResourceGraphDefinition {
			schemaDoc["kind"] = kind
			if resources == nil {
				resources = []any{configMapResource("note", "${schema.metadata.name}-note", nil)}
			}
			return rgdOf(t, name, schemaDoc, resources)
		}
	}
	columns := make([]any, 0, 500)
	for i := range 500 {
		columns = append(columns, map[string]any{"name": fmt.Sprintf("c%d", i), "type": "string", "jsonPath": ".spec.a",
			"description": strings.Repeat("d", 2200)})
	}
	bigSpec, manyStatus := map[string]any{}, map[string]any{}
	for i := range 4000 {
		bigSpec[fmt.Sprintf("f%d", i)] = "string"
	}
	for i := range 2000 {
		manyStatus[fmt.Sprintf("s%d", i)] = "${schema.spec}"
	}
	manyBad := make([]any, 0, 600)
	for i := range 600 {
		manyBad = append(manyBad, configMapResource(fmt.Sprintf("r%d", i), fmt.Sprintf("${schema.metadata.name}-%d", i),
			map[string]any{"v": fmt.Sprintf("${schema.spec.missing%d}", i)}))
	}
	iterators := make([]any, 0, 11)
	for i := range 11 {
		iterators = append(iterators, map[string]any{fmt.Sprintf("i%d", i): "${lists.range(2)}"})
	}
	return []hostileCase{
		{name: "doubling custom types, 60 levels", class: "compile bomb", limitError: true,
			rgd:  simple("hostile-doubling", "HostileDoubling", map[string]any{"spec": map[string]any{"root": "T59"}, "types": doublingTypes(60)}),
			says: []string{"spec.schema.types.T13.b", "using type T12 here", "over the limit of 10000 (Limits.MaxSchemaProperties)"}},
		{name: "doubling custom types, 21 levels", class: "compile bomb", limitError: true,
			rgd:  simple("hostile-doubling-21", "HostileDoublingTwentyOne", map[string]any{"spec": map[string]any{"root": "T20"}, "types": doublingTypes(21)}),
			says: []string{"spec.schema.types.T13.b", "over the limit of 10000 (Limits.MaxSchemaProperties)"}},
		{name: "an enum of a megabyte", class: "compile bomb", limitError: true,
			rgd: simple("hostile-enum", "HostileEnum", map[string]any{"spec": map[string]any{
				"a": "string | enum=" + strings.Repeat("abcdefghijklmnopqrstuvwxyz,", 40_000) + "z"}}),
			says: []string{"over the limit of 1048576 (Limits.MaxCRDBytes)"}},
		{name: "a default of a megabyte", class: "compile bomb", limitError: true,
			rgd: simple("hostile-default", "HostileDefault", map[string]any{"spec": map[string]any{
				"a": `object | default={"a": "` + strings.Repeat("x", 1<<20) + `"}`}}),
			says: []string{"over the limit of 1048576 (Limits.MaxCRDBytes)"}},
		{name: "500 printer columns of 2 KB", class: "compile bomb", limitError: true,
			rgd:  simple("hostile-columns", "HostileColumns", map[string]any{"spec": map[string]any{"a": "string"}, "additionalPrinterColumns": columns}),
			says: []string{"printer columns", "over the limit of 1048576 (Limits.MaxCRDBytes)"}},
		{name: "a status projecting a large spec 2000 times", class: "compile bomb", limitError: true,
			rgd:  simple("hostile-status-copies", "HostileStatusCopies", map[string]any{"spec": bigSpec, "status": manyStatus}),
			says: []string{"Limits.MaxSchemaProperties"}},
		{name: "a status nested 1200 levels deep", class: "compile bomb",
			rgd: simple("hostile-status-deep", "HostileStatusDeep", map[string]any{"spec": map[string]any{"a": "string"},
				"status": map[string]any{"deep": nested(1200, "n", "${schema.spec.a}")}}),
			says: []string{"a CRD's schema cannot nest deeper"}},
		{name: "a spec nested 1200 levels deep", class: "compile bomb",
			rgd:  simple("hostile-spec-deep", "HostileSpecDeep", map[string]any{"spec": nested(1200, "n", "string")}),
			says: []string{"cannot nest deeper"}},
		{name: "custom types that refer to each other", class: "compile bomb",
			rgd: simple("hostile-type-cycle", "HostileTypeCycle", map[string]any{"spec": map[string]any{"a": "A"},
				"types": map[string]any{"A": map[string]any{"b": "B"}, "B": map[string]any{"a": "A"}}}),
			says: []string{"cycle"}},
		{name: "an expression of 100,000 characters", class: "message", maxMessage: 1000,
			rgd: simple("hostile-long-expression", "HostileLongExpression", map[string]any{"spec": map[string]any{"a": "string"}},
				configMapResource("a", "${schema.metadata.name}-a", map[string]any{"v": "${schema.spec.missing" + longExpressionTail + "}"})),
			says: []string{`resource "a"`, "data.v", "${schema.spec.missing + size(", "…"}},
		{name: "600 resources that each fail (48 KB of errors)", class: "message", maxMessage: 32 << 10,
			rgd:  simple("hostile-many-errors", "HostileManyErrors", map[string]any{"spec": map[string]any{"a": "string"}}, manyBad...),
			says: []string{`resource "r0"`, "schema.spec.missing0"}},
		{name: "forEach with 11 iterators", class: "per-instance volume",
			rgd: simple("hostile-iterators", "HostileIterators", map[string]any{"spec": map[string]any{"a": "string"}},
				map[string]any{"id": "a", "forEach": iterators, "template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": `${schema.metadata.name + string(i0)}`}}}),
			says: []string{`resource "a"`, "forEach"}},
		{name: "a tenant's RGD named as the platform's cluster-scoped graph", class: "confinement", reason: "NameTaken", hubOnly: true,
			rgd:  func(t testing.TB) *v1alpha1.ResourceGraphDefinition { return platformSetupRGD(t) },
			says: []string{platformGraph}},
	}
}

// Limits that stop an evaluation whose cost is counted as it runs.
var (
	expressionLimits = []string{"Limits.ExpressionCost", "Limits.ExpressionTimeout"}
	evaluationLimits = []string{"Limits.InstanceCost", "Limits.InstanceTimeout", "Limits.ExpressionCost", "Limits.ExpressionTimeout"}
	// allocationLimits stop a case that works before it allocates (a
	// map, a range) either at the allocation or, on a slow machine (the
	// race detector), by its time first.
	allocationLimits = append([]string{"Limits.MaxValueBytes"}, expressionLimits...)
	// renderLimits stop an instance that renders too much, or that takes
	// too long rendering it.
	renderLimits = []string{"Limits.MaxRenderedBytes", "Limits.InstanceTimeout", "Limits.InstanceCost"}
	// statusLimits stop a status projection that grows too large, or
	// that takes too long building it.
	statusLimits = append([]string{"Limits.MaxStatusBytes"}, expressionLimits...)
)

// metered is c stopped by one of limits rather than one named limit.
func metered(c hostileCase, limits []string) hostileCase {
	c.oneOf = limits
	return c
}

func evalCase(name, class string, spec map[string]any, says ...string) hostileCase {
	spec["case"] = name
	return hostileCase{name: name, class: class, kind: "HostileEval", namespace: "tenant", spec: spec, reason: "LimitExceeded",
		says: append([]string{name + ": "}, says...)}
}

func instanceCases() []hostileCase {
	s1k := strings.Repeat("a", 1000)
	s2k := strings.Repeat("a", 2000)
	long := strings.Repeat("ab", 50_000) // 100,000 characters
	xs := sequence(100_000)
	absentIn := func(ns string, names ...string) func(*testing.T, client.Client, string) {
		return func(t *testing.T, c client.Client, name string) {
			for _, n := range names {
				requireAbsent(t, c, configMapKind, ns, name+n)
			}
		}
	}
	cases := []hostileCase{
		// Allocation.
		evalCase("seededString", "allocation", map[string]any{"count": int64(1) << 40}, "random.seededString", "Limits.MaxValueBytes"),
		evalCase("listsRange", "allocation", map[string]any{"count": int64(1) << 40}, "lists.range", "Limits.MaxValueBytes"),
		evalCase("replaceSquared", "allocation", map[string]any{"s": s1k}, "replace", "Limits.MaxValueBytes"),
		metered(evalCase("joinCopies", "allocation", map[string]any{"count": int64(1000), "s": s2k}, "join"), allocationLimits),
		evalCase("forEachRange", "allocation", map[string]any{"count": int64(1) << 40}, "forEach", "lists.range", "Limits.MaxValueBytes"),
		evalCase("jsonGrowth", "allocation", map[string]any{"s": s1k}, "json.marshal", "Limits.MaxValueBytes"),
		metered(evalCase("mergeGrowth", "allocation", map[string]any{"xs": xs}, "merge"), allocationLimits),
		evalCase("formatGrowth", "allocation", map[string]any{"s": strings.Repeat("a", 200_000)}, "format", "Limits.MaxValueBytes"),
		evalCase("concatDoubling", "allocation", map[string]any{"s": strings.Repeat("a", 1100)}, "cel.bind", "Limits.MaxValueBytes"),
		evalCase("splitChars", "allocation", map[string]any{"s": strings.Repeat("a", 400_000)}, "split", "Limits.MaxValueBytes"),
		metered(evalCase("flattenShared", "allocation", map[string]any{"xs": sequence(2000)}, "flatten"), allocationLimits),
		evalCase("quoteGrowth", "allocation", map[string]any{"s": strings.Repeat("\t", 300_000)}, "strings.quote", "Limits.MaxValueBytes"),
		// Time.
		evalCase("indexOfLong", "time", map[string]any{"s": long}, "indexOf", "Limits.ExpressionCost"),
		evalCase("lastIndexOfLong", "time", map[string]any{"s": long}, "lastIndexOf", "Limits.ExpressionCost"),
		evalCase("containsLong", "time", map[string]any{"s": long}, "contains", "Limits.ExpressionCost"),
		evalCase("distinctMany", "time", map[string]any{"xs": xs}, "distinct()", "Limits.ExpressionCost"),
		metered(evalCase("setsIntersects", "time", map[string]any{"xs": xs}, "sets.intersects"), expressionLimits),
		metered(evalCase("setsEquivalent", "time", map[string]any{"xs": xs}, "sets.equivalent"), expressionLimits),
		metered(evalCase("allRepeated", "time", map[string]any{"xs": xs}, "schema.spec.xs.all"), expressionLimits),
		metered(evalCase("nestedComprehension", "time", map[string]any{"xs": xs}, "schema.spec.xs.exists"), expressionLimits),
		// Over a list without maxItems: kro accepts such RGDs, so they
		// compile (their estimate is a warning), and run bounded.
		metered(evalCase("unboundedNested", "time", map[string]any{"xs": sequence(50_000), "ys": sequence(50_000)}, "schema.spec.ys.exists"), expressionLimits),
		metered(evalCase("unboundedFilter", "time", map[string]any{"xs": sequence(50_000), "ys": sequence(50_000)}, "schema.spec.ys.filter"), expressionLimits),
		metered(evalCase("sortInALoop", "time", map[string]any{"xs": xs}, "sort()"), expressionLimits),
		metered(evalCase("unmarshalInALoop", "time", map[string]any{"s": "[" + strings.Repeat("0,", 300_000) + "0]"}, "json.unmarshal"), expressionLimits),
		evalCase("matchesLong", "time", map[string]any{"s": long}, "matches", "Limits.ExpressionCost"),
		metered(evalCase("instanceBudget", "time", map[string]any{"xs": sequence(300)}, "schema.spec.xs.all"), evaluationLimits),
		// Per-instance volume.
		{name: "wide", class: "per-instance volume", kind: "HostileWide", namespace: "tenant", spec: map[string]any{"count": int64(1000)},
			reason: "LimitExceeded", says: []string{"forEach", "over the limit of 5000 (Limits.MaxChildren)"}},
		{name: "copies", class: "per-instance volume", kind: "HostileVolume", namespace: "tenant",
			spec:   map[string]any{"case": "copies", "count": int64(1000), "blob": strings.Repeat("x", 1_000_000)},
			reason: "LimitExceeded", says: []string{"copies: ", "Limits.MaxRenderedBytes"}},
		{name: "randoms", class: "per-instance volume", kind: "HostileVolume", namespace: "tenant",
			spec:   map[string]any{"case": "randoms", "count": int64(1000), "blob": strings.Repeat("x", 1_000_000)},
			reason: "LimitExceeded", says: []string{"randoms: "}, oneOf: renderLimits},
		{name: "status", class: "per-instance volume", kind: "HostileVolume", namespace: "tenant",
			spec:   map[string]any{"case": "status", "count": int64(2000), "blob": strings.Repeat("x", 1024)},
			reason: "LimitExceeded", says: []string{"status: ", "spec.schema.status.copies"}, oneOf: statusLimits},
		{name: "combinations", class: "per-instance volume", kind: "HostileVolume", namespace: "tenant",
			spec:   map[string]any{"case": "combinations", "count": int64(100)},
			reason: "EvaluationFailed", says: []string{"combinations: ", "1000"}},
		// Messages.
		{name: "longExpression", class: "message", kind: "HostileEval", namespace: "tenant",
			spec:   map[string]any{"case": "longExpression", "s": "not a number"},
			reason: "EvaluationFailed", says: []string{"longExpression: ", "…"}, maxMessage: 1000},
		{name: "longValue", class: "message", kind: "HostileEval", namespace: "tenant",
			spec:   map[string]any{"case": "longValue", "s": strings.Repeat("z", 100_000)},
			reason: "EvaluationFailed", says: []string{"longValue: ", "data.v"}, maxMessage: 1000},
		// Confinement.
		{name: "everywhere", class: "confinement", kind: "HostileEverywhere", spec: map[string]any{"target": "victim"},
			reason: "OutsideNamespace", says: []string{"config: ConfigMap victim/everywhere-config would be outside the instance's namespace",
				`graph "hostile-everywhere" is not one of the cluster-scoped graphs allowed`},
			check: func(t *testing.T, c client.Client, name string) {
				requireAbsent(t, c, configMapKind, "victim", name+"-config")
				requireAbsent(t, c, clusterRoleBindingKind, "", name+"-admin")
			}},
		{name: "escape", class: "confinement", kind: "HostileReach", namespace: "tenant", spec: map[string]any{"case": "escape", "target": "victim"},
			reason: "OutsideNamespace", says: []string{"escape: ConfigMap victim/escape-escape"}, check: absentIn("victim", "-escape")},
		{name: "admin", class: "confinement", kind: "HostileReach", namespace: "tenant", spec: map[string]any{"case": "admin"},
			reason: "OutsideNamespace", says: []string{"admin: ClusterRoleBinding", "admin-admin"},
			check: func(t *testing.T, c client.Client, name string) {
				requireAbsent(t, c, clusterRoleBindingKind, "", name+"-admin")
			}},
		{name: "peek", class: "confinement", kind: "HostileReach", namespace: "tenant", spec: map[string]any{"case": "peek", "target": "victim"},
			reason: "OutsideNamespace", says: []string{"peek: ", "Secret victim/creds"}, check: absentIn("tenant", "-peek")},
		{name: "role", class: "confinement", kind: "HostileReach", namespace: "tenant", spec: map[string]any{"case": "role"},
			reason: "OutsideNamespace", says: []string{"role: ", "ClusterRole", "cluster-admin"}, check: absentIn("tenant", "-role")},
		{name: "gather", class: "confinement", kind: "HostileReach", namespace: "tenant", spec: map[string]any{"case": "gather"},
			check: func(t *testing.T, c client.Client, name string) {
				data, err := configMapDataIn(c, "tenant", name+"-gather")
				require.NoError(t, err)
				assert.Equal(t, "1", data["count"], "a selector without a namespace selects in the instance's namespace only")
			}},
	}
	// Starvation: one tenant's many heavy instances, each spending its
	// whole evaluation budget at every reconcile.
	for i := range heavyInstances {
		c := metered(evalCase("instanceBudget", "starvation", map[string]any{"xs": sequence(300)}, "schema.spec.xs.all"), evaluationLimits)
		c.name, c.namespace = fmt.Sprintf("heavy%d", i), "heavy"
		cases = append(cases, c)
	}
	return cases
}

// heavyInstances is how many heavy instances the starving tenant has.
const heavyInstances = 16

var (
	configMapKind          = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	clusterRoleBindingKind = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}
)

func requireAbsent(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	assert.True(t, apierrors.IsNotFound(err), "%s %s/%s must not be written (%v)", gvk.Kind, ns, name, err)
}

func configMapDataIn(c client.Client, ns, name string) (map[string]string, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)
	return cm.Data, err
}

// --- Following every case at once. ---

// startStatusCache runs, until the test ends, a cache of cfg's objects
// that keeps only their metadata and status: every case is followed at
// once, from its create, without reading its (sometimes megabytes of)
// spec again at every look, and without holding it in the process.
func startStatusCache(t *testing.T, cfg *rest.Config) cache.Cache {
	t.Helper()
	c, err := cache.New(cfg, cache.Options{Scheme: fgtesting.NewScheme(), DefaultTransform: keepStatus})
	require.NoError(t, err)
	fgtesting.StartStoppable(t, c.Start)
	return c
}

func keepStatus(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, "spec")
	}
	return obj, nil
}

var rgdGVK = v1alpha1.GroupVersion.WithKind("ResourceGraphDefinition")

// outcome is what one case came to, and when: reached is false if the
// case was still short of its outcome at its deadline, and then state and
// cond are the last seen.
type outcome struct {
	name, class string
	reached     bool
	took        time.Duration
	state       string
	cond        map[string]any
	err         error
}

func (o outcome) reason() string  { s, _ := o.cond["reason"].(string); return s }
func (o outcome) message() string { s, _ := o.cond["message"].(string); return s }
func (o outcome) status() string  { s, _ := o.cond["status"].(string); return s }

// result is how a case's outcome is listed at the end of the test.
func (o outcome) result() string {
	if o.state == "" {
		return "refused: " + o.reason()
	}
	return o.state + " " + o.reason()
}

// look reads the case's object once: for a compile case, whether the hub
// refused the RGD (GraphAccepted False); for an instance case, whether the
// instance shows its expected state and Ready reason.
func (hc hostileCase) look(ctx context.Context, r client.Reader, rgdName string) outcome {
	o := outcome{name: hc.name, class: hc.class}
	u := &unstructured.Unstructured{}
	key := client.ObjectKey{Namespace: hc.namespace, Name: hc.instanceName()}
	if hc.rgd != nil {
		u.SetGroupVersionKind(rgdGVK)
		key = client.ObjectKey{Name: rgdName}
	} else {
		u.SetGroupVersionKind(hostileGVK(hc.kind))
	}
	if o.err = r.Get(ctx, key, u); o.err != nil {
		return o
	}
	if hc.rgd != nil {
		o.cond = condition(u, v1alpha1.ConditionGraphAccepted)
		o.reached = o.status() == string(metav1.ConditionFalse)
		return o
	}
	o.state, _, _ = unstructured.NestedString(u.Object, "status", "state")
	o.cond = condition(u, "Ready")
	o.reached = o.state == hc.wantState() && (hc.reason == "" || o.reason() == hc.reason)
	return o
}

func (hc hostileCase) wantState() string {
	if hc.reason == "" {
		return "ACTIVE"
	}
	return "ERROR"
}

// follow looks at the case every tick from its create until it reaches its
// outcome or hostileCaseBound has passed since created.
func (hc hostileCase) follow(ctx context.Context, r client.Reader, rgdName string, created time.Time) outcome {
	deadline := created.Add(hostileCaseBound)
	poll := time.NewTicker(tick)
	defer poll.Stop()
	for {
		o := hc.look(ctx, r, rgdName)
		o.took = time.Since(created)
		if o.reached || time.Now().After(deadline) || ctx.Err() != nil {
			return o
		}
		select {
		case <-ctx.Done():
		case <-poll.C:
		}
	}
}

// assertRefused checks that the hub refused the case's RGD as it says.
func (hc hostileCase) assertRefused(t *testing.T, o outcome) {
	t.Helper()
	require.True(t, o.reached, "RGD of %q must be refused within %v; last seen GraphAccepted %v (%v)", hc.name, hostileCaseBound, o.cond, o.err)
	wantReason := hc.reason
	if wantReason == "" {
		wantReason = "InvalidResourceGraph"
	}
	assert.Equal(t, wantReason, o.reason())
	hc.assertMessage(t, o.message(), true)
}

// assertOutcome checks that the case's instance reached its outcome, with
// the message it says, and wrote nothing it must not.
func (hc hostileCase) assertOutcome(t *testing.T, spoke client.Client, o outcome) {
	t.Helper()
	require.True(t, o.reached, "instance %s/%s must reach %s %s within %v; last seen %q Ready %.600v (%v)",
		hc.namespace, hc.instanceName(), hc.wantState(), hc.reason, hostileCaseBound, o.state, o.cond, o.err)
	if hc.reason != "" {
		hc.assertMessage(t, o.message(), true)
	}
	if hc.check != nil {
		hc.check(t, spoke, hc.instanceName())
	}
}

// assertMessage checks that msg says what the case says; a message shown
// (a condition's) must also be at most maxMessage long.
func (hc hostileCase) assertMessage(t *testing.T, msg string, shown bool) {
	t.Helper()
	for _, s := range hc.says {
		assert.Contains(t, msg, s)
	}
	if len(hc.oneOf) > 0 {
		assert.True(t, slices.ContainsFunc(hc.oneOf, func(s string) bool { return strings.Contains(msg, s) }),
			"the message names one of %q: %.500s", hc.oneOf, msg)
	}
	if shown && hc.maxMessage > 0 {
		assert.LessOrEqual(t, len(msg), hc.maxMessage, "message: %.500s", msg)
	}
	t.Logf("%d bytes: %.300s", len(msg), msg)
}

// touch changes an instance's note and returns its new generation.
func touch(t *testing.T, c client.Client, gvk schema.GroupVersionKind, key types.NamespacedName, note string) int64 {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	patch := fmt.Appendf(nil, `{"spec":{"note":%q}}`, note)
	require.NoError(t, c.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch)))
	return u.GetGeneration()
}

// awaitGeneration waits until the case's instance shows its outcome for
// generation gen (the Ready condition's observedGeneration).
func awaitGeneration(t *testing.T, c client.Client, hc hostileCase, gen int64) outcome {
	t.Helper()
	var o outcome
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		o = hc.look(context.Background(), c, "")
		g, _ := o.cond["observedGeneration"].(int64)
		assert.True(ct, o.reached && g >= gen, "%s/%s generation %d: %q %v (%v)", hc.namespace, hc.instanceName(), gen, o.state, o.cond, o.err)
	}, wait, tick)
	return o
}

// --- Measuring the benign tenant and the process. ---

// logReconcileWork logs, per graph, how many reconciles the hub's spoke
// runtime ran and how long they took together (its metrics, in this
// process): where the run's time went.
func logReconcileWork(t *testing.T) {
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "fleetgraph_spoke_reconcile_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			graphName := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "graph" {
					graphName = l.GetValue()
				}
			}
			h := m.GetHistogram()
			t.Logf("reconciles of %-22s %6d, %8.1fs in all", graphName, h.GetSampleCount(), h.GetSampleSum())
		}
	}
}

// rssWatch samples, until stopped, the process's resident set (VmRSS)
// and the memory Go's runtime holds from the OS (what its heap, stacks and
// own structures have mapped and not released): under the race detector
// the first adds the detector's shadow memory, several times the second.
type rssWatch struct {
	stop    chan struct{}
	done    chan struct{}
	maxRSS  uint64
	maxGo   uint64
	samples int
}

// goMemory is the memory Go's runtime holds from the OS.
func goMemory() uint64 {
	ms := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(ms)
	return ms[0].Value.Uint64() - ms[1].Value.Uint64()
}

func watchRSS(t *testing.T) *rssWatch {
	w := &rssWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, err := procStatus("VmRSS"); err == nil {
				w.maxRSS = max(w.maxRSS, rss)
				w.maxGo = max(w.maxGo, goMemory())
				w.samples++
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(w.end)
	return w
}

func (w *rssWatch) end() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// procStatus reads a field of /proc/self/status in bytes (VmRSS: the
// resident set now; VmHWM: its peak since the process started).
func procStatus(field string) (uint64, error) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kib << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// benignBound is what a benign instance's p99 is held to: issue 23's 1 s,
// or, where the same load leaves a plain controller's p99 on the same kind
// (floorP99, measured in the same run) above that, benignOverFloor times
// that floor: a target below the machine's own floor cannot be met by
// any controller, and the hub is then judged against the floor.
func benignBound(floorP99 time.Duration) time.Duration {
	if floorP99 <= benignP99Bound {
		return benignP99Bound
	}
	return benignOverFloor * floorP99
}

// latencyProbe touches one benign instance's spec every interval and
// measures, through a watch, the time until its status says that
// generation was reconciled (the Ready condition's observedGeneration).
// Every state it sees must be ACTIVE. It also keeps how long the API
// server took to answer each touch, which is part of every sample and
// none of the hub's doing: on a loaded machine it is most of the p99.
type latencyProbe struct {
	c        client.WithWatch
	gvk      schema.GroupVersionKind
	key      types.NamespacedName
	mu       sync.Mutex
	samples  []time.Duration
	writes   []time.Duration
	echoes   []time.Duration // until the probe's own watch showed its change
	inactive []string
}

func (p *latencyProbe) run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; ; i++ {
		if err := p.sample(ctx, i); err != nil && ctx.Err() == nil {
			p.mu.Lock()
			p.inactive = append(p.inactive, err.Error())
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sample opens a watch on the instance, changes its note and waits until
// the watch shows the new generation reconciled. A watch the API server
// closes meanwhile (a loaded test server does) is opened again: its first
// event is the instance as it is then, so no state goes unseen.
func (p *latencyProbe) sample(ctx context.Context, i int) error {
	w, err := p.watch(ctx)
	if err != nil {
		return err
	}
	defer func() { w.Stop() }()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(p.gvk)
	u.SetNamespace(p.key.Namespace)
	u.SetName(p.key.Name)
	start := time.Now()
	patch := fmt.Appendf(nil, `{"spec":{"note":"touch-%d"}}`, i)
	if err := p.c.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("touching %s: %w", p.key, err)
	}
	p.mu.Lock()
	p.writes = append(p.writes, time.Since(start))
	p.mu.Unlock()
	gen := u.GetGeneration()
	deadline := time.After(30 * time.Second)
	echoed := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-deadline:
			p.record(30 * time.Second)
			return fmt.Errorf("%s generation %d not reconciled in 30s", p.key, gen)
		case ev, ok := <-w.ResultChan():
			if !ok {
				if w, err = p.watch(ctx); err != nil {
					return err
				}
				continue
			}
			obj, isU := ev.Object.(*unstructured.Unstructured)
			if !isU || ev.Type == watch.Error {
				continue
			}
			if !echoed && obj.GetGeneration() >= gen {
				// The API server's own part: the change made and seen on a
				// watch of its kind, whoever reconciles it.
				echoed = true
				p.mu.Lock()
				p.echoes = append(p.echoes, time.Since(start))
				p.mu.Unlock()
			}
			state, _, _ := unstructured.NestedString(obj.Object, "status", "state")
			if state != "ACTIVE" {
				return fmt.Errorf("%s is %q", p.key, state)
			}
			if observedGeneration(obj) >= gen {
				p.record(time.Since(start))
				return nil
			}
		}
	}
}

// watch opens a watch on the probed instance alone.
func (p *latencyProbe) watch(ctx context.Context) (watch.Interface, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(p.gvk.GroupVersion().WithKind(p.gvk.Kind + "List"))
	w, err := p.c.Watch(ctx, list, client.InNamespace(p.key.Namespace), client.MatchingFields{"metadata.name": p.key.Name})
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", p.key, err)
	}
	return w, nil
}

func (p *latencyProbe) record(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.samples = append(p.samples, d)
}

func observedGeneration(u *unstructured.Unstructured) int64 {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			g, _ := m["observedGeneration"].(int64)
			return g
		}
	}
	return 0
}

// percentile of durations (sorted in place); 0 if there are none.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[(len(ds)*p+99)/100-1]
}

func createNamespaces(t *testing.T, c client.Client, names ...string) {
	t.Helper()
	for _, ns := range names {
		require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
}

func createCreds(t *testing.T, c client.Client, ns, user string) {
	t.Helper()
	require.NoError(t, c.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds", Labels: map[string]string{"app": "creds"}},
		StringData: map[string]string{"user": user},
	}))
}

func requireGraphsReady(t *testing.T, hub client.Client, names ...string) {
	t.Helper()
	for _, name := range names {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			ready := rgdCondition(hub, name, v1alpha1.ConditionReady)
			require.NotNil(ct, ready)
			assert.Equal(ct, metav1.ConditionTrue, ready.Status, "%s: %s", ready.Reason, ready.Message)
		}, wait, tick, "RGD %s is Ready", name)
	}
}

func hostileInstance(hc hostileCase) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": hc.spec}}
	u.SetGroupVersionKind(hostileGVK(hc.kind))
	u.SetNamespace(hc.namespace)
	u.SetName(hc.instanceName())
	return u
}

// TestHostileTenantsAreStoppedAndOthersKeepWorking runs issue 23's corpus:
// each hostile RGD is refused by graph.Compile and by a real hub, naming
// what it passed, and each hostile instance goes to ERROR with a message
// naming the resource, the expression or object, and the limit, all within
// hostileCaseBound, while the process stays under hostileRSSBound and a
// benign tenant's instances, of another graph and of the hostile graph in
// another namespace, stay ACTIVE and reconciled within benignP99Bound at
// p99, or within benignOverFloor times the p99 of a plain controller
// answering the same change on the same kind in the same run, where that
// floor is itself over benignP99Bound (floorProbe). The two bounds are asserted without the race detector only (make
// test-hostile); under -race (make test-hostile-race) the cases, the
// restart and the benign tenant's staying ACTIVE still are.
//
// Every case is created at once, the heavy tenant's sixteen instances
// included, so the benign tenant is measured under all of them together.
func TestHostileTenantsAreStoppedAndOthersKeepWorking(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 1)
	ctx := context.Background()
	hubClient := newClient(t, fleet.Hub.Config)
	spokeCfg := fleet.Spokes()[0].Config
	spokeClient := newClient(t, spokeCfg)
	createNamespaces(t, spokeClient, "benign", "tenant", "heavy", "victim", "floor")
	createCreds(t, spokeClient, "tenant", "tenant-user")
	createCreds(t, spokeClient, "victim", "victim-user")
	rss := watchRSS(t)

	provider, err := fleet.NewProvider(ctx, sdk.TrimCache)
	require.NoError(t, err)
	_, stopHub := startHostileHub(t, fleet.Hub.Config, provider, platformSetupRGD(t))
	served := servedRGDs(t)
	names := []string{}
	for _, rgd := range served {
		require.NoError(t, hubClient.Create(ctx, rgd))
		names = append(names, rgd.Name)
	}
	requireGraphsReady(t, hubClient, names...)

	// The benign tenant: an instance of its own graph, and one of the
	// graph the hostile instances use, in its own namespace.
	benign := []*latencyProbe{}
	watcher, err := client.NewWithWatch(spokeCfg, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	for _, b := range []struct{ kind, name string }{{"BenignNote", "benign"}, {"HostileEval", "benign-eval"}} {
		inst := instance(hostileGVK(b.kind), b.name, map[string]any{"note": "hello"})
		inst.SetNamespace("benign")
		createWhenServed(t, spokeClient, inst)
		benignCase := hostileCase{name: b.name, kind: b.kind, namespace: "benign"}
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			o := benignCase.look(ctx, spokeClient, "")
			assert.True(ct, o.reached, "benign %s: %q %v (%v)", b.name, o.state, o.cond, o.err)
		}, wait, tick, "benign %s is ACTIVE", b.name)
		benign = append(benign, &latencyProbe{c: watcher, gvk: hostileGVK(b.kind), key: types.NamespacedName{Namespace: "benign", Name: b.name}})
	}
	// The platform's own cluster-scoped graph runs unconfined.
	platform := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"target": "tenant"}}}
	platform.SetGroupVersionKind(hostileGVK("PlatformSetup"))
	platform.SetName("onboarding")
	createWhenServed(t, spokeClient, platform)

	probeCtx, stopProbes := context.WithCancel(ctx)
	var probes sync.WaitGroup
	for _, p := range benign {
		probes.Go(func() { p.run(probeCtx, 200*time.Millisecond) })
	}
	floors := []*floorProbe{
		{c: watcher, gvk: configMapKind, ns: "benign", name: "floor-note", note: []string{"data", "note"}},
		{c: watcher, gvk: hostileGVK("HostileEval"), ns: "floor", name: "floor-eval", note: []string{"spec", "note"}},
	}
	for _, f := range floors {
		probes.Go(func() { _ = f.run(probeCtx, 200*time.Millisecond) })
	}
	defer func() { stopProbes(); probes.Wait() }()

	// Every case at once, each followed from its create to its outcome
	// through caches of the hub's RGDs and the spoke's instances.
	hubStatus, spokeStatus := startStatusCache(t, fleet.Hub.Config), startStatusCache(t, spokeCfg)
	compiles, instances := compileCases(), instanceCases()
	rgdNames := make([]string, len(compiles))
	for i, hc := range compiles {
		rgdNames[i] = fmt.Sprintf("%s-%d", hc.rgd(t).Name, i)
		if hc.hubOnly {
			rgdNames[i] = platformGraph
		}
	}
	// Creates go out four at a time: an instance holding a list of 1e5
	// integers takes the test API server seconds to admit, and two dozen
	// at once pass its request timeout.
	outcomes := map[string]outcome{}
	var mu sync.Mutex
	var creates, follows sync.WaitGroup
	slots := make(chan struct{}, 4)
	launch := func(hc hostileCase, r client.Reader, rgdName string, create func() error) {
		creates.Go(func() {
			slots <- struct{}{}
			at := time.Now()
			err := create()
			<-slots
			if !assert.NoError(t, err, hc.name) {
				return
			}
			follows.Go(func() {
				o := hc.follow(ctx, r, rgdName, at)
				mu.Lock()
				outcomes[hc.name] = o
				mu.Unlock()
			})
		})
	}
	for i, hc := range compiles {
		launch(hc, hubStatus, rgdNames[i], func() error {
			rgd := hc.rgd(t)
			rgd.Name = rgdNames[i]
			return hubClient.Create(ctx, rgd)
		})
	}
	for _, hc := range instances {
		launch(hc, spokeStatus, "", func() error { return spokeClient.Create(ctx, hostileInstance(hc)) })
	}
	creates.Wait()
	require.False(t, t.Failed(), "every case is created")
	follows.Wait()

	t.Run("compile", func(t *testing.T) {
		for _, hc := range compiles {
			t.Run(hc.name, func(t *testing.T) {
				_, err := graph.Compile(hc.rgd(t), graph.Options{})
				if hc.hubOnly {
					require.NoError(t, err)
				} else {
					require.Error(t, err)
					var ge *graph.Error
					require.ErrorAs(t, err, &ge, "a *graph.Error: %v", err)
					if hc.limitError {
						assert.ErrorIs(t, err, graph.ErrLimit)
					}
					hc.assertMessage(t, err.Error(), false)
				}
				hc.assertRefused(t, outcomes[hc.name])
			})
		}
	})
	t.Run("instance", func(t *testing.T) {
		for _, hc := range instances {
			t.Run(hc.name, func(t *testing.T) { hc.assertOutcome(t, spokeClient, outcomes[hc.name]) })
		}
	})
	t.Run("platform graph runs unconfined", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			_, err := configMapDataIn(spokeClient, "tenant", "onboarding-welcome")
			assert.NoError(ct, err)
		}, wait, tick)
	})

	stopProbes()
	probes.Wait()
	logReconcileWork(t) // before the restart, which forgets the figures

	// Every hostile RGD and instance is stored: a new hub on the same
	// clusters must come up, stop them again and serve the others.
	t.Run("a hub restarted with every hostile case stored serves the others", func(t *testing.T) {
		stopHub()
		restarted := time.Now()
		provider, err := fleet.NewProvider(ctx, sdk.TrimCache)
		require.NoError(t, err)
		startHostileHub(t, fleet.Hub.Config, provider, platformSetupRGD(t))
		for _, p := range benign {
			gen := touch(t, spokeClient, p.gvk, p.key, "after-restart")
			awaitGeneration(t, spokeClient, hostileCase{name: p.key.Name, kind: p.gvk.Kind, namespace: p.key.Namespace}, gen)
		}
		t.Logf("the restarted hub reconciled the benign tenant's changes %v after it started", time.Since(restarted).Round(time.Millisecond))
		for _, hc := range []hostileCase{instances[0], instances[len(instances)-1]} {
			gen := touch(t, spokeClient, hostileGVK(hc.kind), types.NamespacedName{Namespace: hc.namespace, Name: hc.instanceName()}, "after-restart")
			o := awaitGeneration(t, spokeClient, hc, gen)
			hc.assertMessage(t, o.message(), true)
		}
		for i, hc := range compiles {
			hc.assertRefused(t, hc.look(ctx, hubClient, rgdNames[i]))
		}
	})
	rss.end()
	hwm, err := procStatus("VmHWM")
	require.NoError(t, err)

	listed := slices.SortedFunc(maps.Values(outcomes), func(a, b outcome) int { return strings.Compare(a.class+a.name, b.class+b.name) })
	for _, o := range listed {
		t.Logf("%-20s %-50s %-30s %v", o.class, o.name, o.result(), o.took.Round(time.Millisecond))
	}
	t.Logf("%d cases: %d RGDs refused, %d instances", len(outcomes), len(compiles), len(instances))
	t.Logf("process RSS: max sampled VmRSS %d MiB (%d samples), VmHWM %d MiB; Go runtime's memory at most %d MiB",
		rss.maxRSS>>20, rss.samples, hwm>>20, rss.maxGo>>20)
	if raceDetector {
		t.Log("built with -race: its shadow memory (about 3x the heap) and slowdown make the RSS and p99 bounds meaningless; they are asserted by the run without it (make test-hostile)")
	} else {
		assert.Less(t, rss.maxRSS, uint64(hostileRSSBound))
		assert.Less(t, hwm, uint64(hostileRSSBound), "the process's peak resident set")
	}
	stopProbes()
	floorP99 := map[string]time.Duration{}
	for _, f := range floors {
		f50, f99, fn := f.percentiles()
		floorP99[f.gvk.Kind] = f99
		t.Logf("floor on a %s: the same requests and watch hops answered by a plain controller in this process: %d samples, p50 %v, p99 %v",
			f.gvk.Kind, fn, f50.Round(time.Millisecond), f99.Round(time.Millisecond))
	}
	for _, p := range benign {
		p.mu.Lock()
		n, p50, p99, worst := len(p.samples), percentile(p.samples, 50), percentile(p.samples, 99), percentile(p.samples, 100)
		w50, w99 := percentile(p.writes, 50), percentile(p.writes, 99)
		e50, e99 := percentile(p.echoes, 50), percentile(p.echoes, 99)
		inactive := p.inactive
		p.mu.Unlock()
		t.Logf("benign %s %s: %d reconciles after a spec change, p50 %v, p99 %v, max %v; the API server's answer to the change alone: p50 %v, p99 %v; "+
			"the change seen on a watch of its kind: p50 %v, p99 %v",
			p.gvk.Kind, p.key, n, p50.Round(time.Millisecond), p99.Round(time.Millisecond), worst.Round(time.Millisecond),
			w50.Round(time.Millisecond), w99.Round(time.Millisecond), e50.Round(time.Millisecond), e99.Round(time.Millisecond))
		assert.Empty(t, inactive, "benign %s must stay ACTIVE and reconciled", p.key)
		assert.Greater(t, n, 20, "benign %s was measured throughout", p.key)
		if !raceDetector {
			floor, ok := floorP99[p.gvk.Kind]
			if !ok {
				floor = floorP99[configMapKind.Kind]
			}
			bound := benignBound(floor)
			t.Logf("benign %s p99 %v against %v (its floor's p99 %v)", p.key, p99.Round(time.Millisecond), bound.Round(time.Millisecond), floor.Round(time.Millisecond))
			assert.Less(t, p99, bound, "benign %s p99", p.key)
		}
	}
}
