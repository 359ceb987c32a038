package graph_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi/openapitest"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

// staticResolver resolves the kinds of the embedded Kubernetes OpenAPI
// documents once, so that compiling measures the compiler, not the fetch.
func staticResolver(t testing.TB) graph.StaticResolver {
	t.Helper()
	live := resolver.New(openapitest.NewEmbeddedFileClient(), resolver.Options{})
	out := graph.StaticResolver{}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Service"}, {Version: "v1", Kind: "Secret"},
		{Version: "v1", Kind: "Namespace"}, {Version: "v1", Kind: "ResourceQuota"}, {Version: "v1", Kind: "Pod"},
		{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "StatefulSet"},
		{Group: "batch", Version: "v1", Kind: "Job"},
	} {
		s, err := live.ResolveSchema(gvk)
		require.NoError(t, err)
		out[gvk] = s
	}
	return out
}

// chainRGD builds an RGD of n resources cycling through ConfigMap,
// Deployment and Service, each reading the instance and the one before.
func chainRGD(t testing.TB, n int) *v1alpha1.ResourceGraphDefinition {
	return namedChainRGD(t, n, "r")
}

// namedChainRGD is chainRGD with resource ids prefix0, prefix1...
func namedChainRGD(t testing.TB, n int, prefix string) *v1alpha1.ResourceGraphDefinition {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: chain}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Chain
    spec:
      name: string | required=true
      image: string | default="nginx"
      replicas: integer | default=1 minimum=0
      port: integer | default=80
    status:
      first: ${%[1]s0.metadata.name}
  resources:
`, prefix)
	for i := range n {
		prev := "schema.spec.name"
		if i > 0 {
			prev = fmt.Sprintf("%s%d.metadata.name", prefix, i-1)
		}
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, `  - id: `+prefix+`%d
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.spec.name}-%d
      data:
        previous: ${%s}
        replicas: ${string(schema.spec.replicas)}
`, i, i, prev)
		case 1:
			fmt.Fprintf(&b, `  - id: `+prefix+`%d
    readyWhen:
    - ${`+prefix+`%d.status.?availableReplicas.orValue(0) >= 1}
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${schema.spec.name}-%d
        labels: {app: "${schema.spec.name}"}
      spec:
        replicas: ${schema.spec.replicas}
        selector: {matchLabels: {app: "${schema.spec.name}-%d"}}
        template:
          metadata: {labels: {app: "${schema.spec.name}-%d"}}
          spec:
            containers:
            - name: app
              image: ${schema.spec.image}
              ports: [{containerPort: "${schema.spec.port}"}]
              env: [{name: PREV, value: "${%s}"}]
`, i, i, i, i, i, prev)
		case 2:
			fmt.Fprintf(&b, `  - id: `+prefix+`%d
    template:
      apiVersion: v1
      kind: Service
      metadata:
        name: ${%s}
      spec:
        selector: ${`+prefix+`%d.spec.selector.matchLabels}
        ports: [{port: "${schema.spec.port}", targetPort: "${`+prefix+`%d.spec.template.spec.containers[0].ports[0].containerPort}"}]
`, i, prev, i-1, i-1)
		}
	}
	return parseRGD(t, b.String())
}

func TestChainRGDCompilesTyped(t *testing.T) {
	for _, n := range []int{3, 10, 50} {
		g, err := graph.Compile(chainRGD(t, n), typedOptions(t))
		require.NoError(t, err)
		require.Len(t, g.Levels, n)
	}
}

// BenchmarkCompile compiles the same graph again and again: after the
// first, its expressions' parses and its CRD's verdict come from the
// process-wide caches, so it measures a recompile (a new revision of a
// graph whose expressions did not change, or the same RGD on another
// hub). BenchmarkCompileFirst measures a first compile.
func BenchmarkCompile(b *testing.B) {
	res := staticResolver(b)
	for _, n := range []int{3, 10, 50} {
		rgd := chainRGD(b, n)
		_, err := graph.Compile(rgd, graph.Options{Resolver: res}) // warm the type cache
		require.NoError(b, err)
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			before := processCPU()
			for b.Loop() {
				if _, err := graph.Compile(rgd, graph.Options{Resolver: res}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU()-before).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkCompileNewGraph compiles, at each iteration, a graph whose
// resource ids, and so every expression that reads a resource, were never
// compiled before in the process: the cost of a first compile, without the
// parses and CRD verdicts that BenchmarkCompile's repeated compiles of one
// graph reuse. (Its CRD, and the expressions reading only the instance,
// are the same at each iteration.)
func BenchmarkCompileNewGraph(b *testing.B) {
	res := staticResolver(b)
	_, err := graph.Compile(chainRGD(b, 10), graph.Options{Resolver: res}) // warm the type cache
	require.NoError(b, err)
	b.Run("resources=10", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			b.StopTimer()
			rgd := namedChainRGD(b, 10, fmt.Sprintf("g%dr", i))
			i++
			b.StartTimer()
			if _, err := graph.Compile(rgd, graph.Options{Resolver: res}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCompileFirst measures a first compile, with the caches a
// compile fills emptied before each iteration (outside the timer):
//
//   - new-graph: the parses of the graph's expressions and the verdict on
//     its CRD are cold, the types of its child kinds (ConfigMap,
//     Deployment, Service) warm: a hub compiling a graph it has never seen,
//     after any other graph using these kinds (target: 1.5 ms at 10
//     resources);
//   - first-in-process: the child kinds' types, formats and CEL
//     environments are cold too: the first graph a process compiles. Only
//     the base CEL environments, built once per process, stay.
//
// Unlike BenchmarkCompileNewGraph, nothing of the graph is cached: neither
// the expressions that read only the instance nor its CRD's verdict.
func BenchmarkCompileFirst(b *testing.B) {
	res := staticResolver(b)
	for _, n := range []int{3, 10, 50} {
		rgd := chainRGD(b, n)
		_, err := graph.Compile(rgd, graph.Options{Resolver: res}) // the base environments
		require.NoError(b, err)
		for _, cold := range []struct {
			name   string
			forget func()
		}{
			{"new-graph", graph.ForgetCompiles},
			{"first-in-process", func() { graph.ForgetCompiles(); graph.ForgetKinds() }},
		} {
			b.Run(fmt.Sprintf("resources=%d/%s", n, cold.name), func(b *testing.B) {
				b.ReportAllocs()
				var cpu time.Duration
				for b.Loop() {
					b.StopTimer()
					cold.forget()
					b.StartTimer()
					before := processCPU()
					if _, err := graph.Compile(rgd, graph.Options{Resolver: res}); err != nil {
						b.Fatal(err)
					}
					cpu += processCPU() - before
				}
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// processCPU is the CPU time the process has used (user and system, the
// garbage collector's included). On a machine shared with other work a
// compile's wall time grows with the load; its CPU time much less, so the
// benchmarks report both (cpu-ns/op).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
