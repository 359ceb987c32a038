//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const wait = 60 * time.Second

func init() { log.SetLogger(logr.Discard()) }

// compile parses RGD YAML and compiles it.
func compile(t testing.TB, rgdYAML string) *graph.Graph {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.Unmarshal([]byte(rgdYAML), rgd))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	return g
}

// newClient returns a client for a cluster, with the CRD types registered.
func newClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return c
}

// installCRD creates the graph's CRD on a cluster and waits until it is
// established, as the hub does in production.
func installCRD(t testing.TB, c client.Client, g *graph.Graph) {
	t.Helper()
	crd := g.CRD.DeepCopy()
	require.NoError(t, c.Create(context.Background(), crd))
	eventually(t, func() (bool, string) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(crd), got); err != nil {
			return false, err.Error()
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "CRD not established yet"
	})
}

// The package's integration tests share one fleet, a hub and two spokes,
// started on first use and stopped by TestMain: starting one per test was
// most of the package's time. Tests that share it stay out of each other's
// way: each serves graphs of its own (graph names and kinds, compileAs) in
// namespaces of its own, and engages the spokes under cluster names of its
// own (providerFor), since the runtime's metrics and watch health are
// keyed by cluster name. Tests whose subject is how soon something happens,
// and the one that counts every goroutine of the process, do not call
// t.Parallel: they run before the parallel ones, alone. A test that needs a
// cluster to itself starts one and says why.
var shared struct {
	once  sync.Once
	fleet *fgtesting.Fleet
	err   error
}

// sharedFleet returns the package's fleet, starting it on first use.
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

// compileAs compiles rgdYAML as graph name, of a kind made from name
// ("pair-two": PairTwo), so that no two tests on the shared fleet serve one
// graph or one kind.
func compileAs(t testing.TB, rgdYAML, name string) *graph.Graph {
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
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	return g
}

// providerFor returns a Provider holding the given spokes, each under the
// test's own name for it (prefix-spoke-N), and those names. clusterOpts
// apply to each cluster, after cacheopts.ReportWatchErrors.
func providerFor(t testing.TB, prefix string, spokes []*fgtesting.Cluster, clusterOpts ...cluster.Option) (*fgtesting.Provider, []multicluster.ClusterName) {
	t.Helper()
	p := fgtesting.NewProvider(clusterOpts...)
	names := make([]multicluster.ClusterName, 0, len(spokes))
	for _, s := range spokes {
		name := prefix + "-" + s.Name
		require.NoError(t, p.AddConfig(context.Background(), name, s.Config))
		names = append(names, multicluster.ClusterName(name))
	}
	return p, names
}

// servedOnOneSpoke serves the graph of rgdYAML, as graph name, on the
// shared fleet's first spoke: it installs the graph's CRD there, creates
// namespace name and starts a Runtime. It returns a client for the spoke,
// the graph and the Runtime.
func servedOnOneSpoke(t *testing.T, name, rgdYAML string) (client.Client, *graph.Graph, *spoke.Runtime) {
	t.Helper()
	return servedOnOneSpokeWith(t, name, rgdYAML, spoke.Config{})
}

// servedOnOneSpokeWith is servedOnOneSpoke with the Runtime's options.
func servedOnOneSpokeWith(t *testing.T, name, rgdYAML string, opts spoke.Config) (client.Client, *graph.Graph, *spoke.Runtime) {
	t.Helper()
	fleet := sharedFleet(t)
	g := compileAs(t, rgdYAML, name)
	s := fleet.Spokes()[0]
	c := newClient(t, s.Config)
	installCRD(t, c, g)
	createNamespace(t, c, name)
	// Trimmed as providers/secret trims it, so that the runtime is tested
	// on the caches it meets in production.
	provider, _ := providerFor(t, name, []*fgtesting.Cluster{s}, cacheopts.TrimCache)
	rt := startRuntime(t, fleet, provider, opts)
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	return c, g, rt
}

// startRuntime starts a multicluster manager over provider with a Runtime
// added, and stops it on cleanup.
func startRuntime(t testing.TB, fleet *fgtesting.Fleet, provider *fgtesting.Provider, opts spoke.Config) *spoke.Runtime {
	t.Helper()
	rt, stop := runRuntime(t, fleet, provider, opts)
	t.Cleanup(stop)
	return rt
}

// runRuntime is startRuntime with the stop in the caller's hands; stop
// waits for the manager to return and may be called more than once.
func runRuntime(t testing.TB, fleet *fgtesting.Fleet, provider *fgtesting.Provider, opts spoke.Config) (*spoke.Runtime, func()) {
	t.Helper()
	mgr, err := mcmanager.New(fleet.Hub.Config, provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	rt := spoke.New(opts)
	require.NoError(t, mgr.Add(rt))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	return rt, func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
}

// installAdmissionPolicy installs the graph's admission policy and waits
// until the API server applies it (a dry-run create of an instance with
// probeSpec comes back stamped).
func installAdmissionPolicy(t testing.TB, c client.Client, g *graph.Graph, probeSpec map[string]any) {
	t.Helper()
	for _, obj := range contract.AdmissionPolicy(g) {
		require.NoError(t, c.Create(context.Background(), obj))
	}
	waitForAdmission(t, c, g, probeSpec, true)
}

// removeAdmissionPolicy deletes the graph's admission policy and waits
// until the API server stops applying it.
func removeAdmissionPolicy(t testing.TB, c client.Client, g *graph.Graph, probeSpec map[string]any) {
	t.Helper()
	for _, obj := range contract.AdmissionPolicy(g) {
		require.NoError(t, client.IgnoreNotFound(c.Delete(context.Background(), obj)))
	}
	waitForAdmission(t, c, g, probeSpec, false)
}

// waitForAdmission polls until a dry-run create of an instance with
// probeSpec comes back stamped with our finalizer (stamped true) or not.
func waitForAdmission(t testing.TB, c client.Client, g *graph.Graph, probeSpec map[string]any, stamped bool) {
	t.Helper()
	eventually(t, func() (bool, string) {
		probe := newInstance(g, "default", "admission-probe", probeSpec)
		if err := c.Create(context.Background(), probe, client.DryRunAll); err != nil {
			return false, err.Error()
		}
		got := slices.Contains(probe.GetFinalizers(), contract.Finalizer)
		return got == stamped, fmt.Sprintf("admission policy in effect: %v, want %v", got, stamped)
	})
}

// eventually polls cond until it holds, failing with its last reason.
func eventually(t testing.TB, cond func() (bool, string)) {
	t.Helper()
	eventuallyWithin(t, wait, cond)
}

// eventuallyWithin is eventually with a deadline of its own, for tests
// whose subject is how soon something happens.
func eventuallyWithin(t testing.TB, wait time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(wait)
	why := ""
	for time.Now().Before(deadline) {
		var ok bool
		if ok, why = cond(); ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("condition still false after %s: %s", wait, why)
}

func newInstance(g *graph.Graph, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(g.Instance.GVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func getInstance(t testing.TB, c client.Client, g *graph.Graph, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(g.Instance.GVK)
	err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u)
	return u, err
}

// stateIs waits for the instance's status.state.
func stateIs(t testing.TB, c client.Client, g *graph.Graph, ns, name, state string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		u, err := getInstance(t, c, g, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got, _, _ := unstructured.NestedString(u.Object, "status", "state")
		return got == state, fmt.Sprintf("state %q, status %v", got, u.Object["status"])
	})
}

func configMap(c client.Client, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u)
	return u, err
}

// configMapData waits until the ConfigMap exists with data[key] == want.
func configMapData(t testing.TB, c client.Client, ns, name, key, want string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		u, err := configMap(c, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got, _, _ := unstructured.NestedString(u.Object, "data", key)
		return got == want, fmt.Sprintf("data[%s] = %q, want %q", key, got, want)
	})
}

// gone waits until the ConfigMap does not exist.
func gone(t testing.TB, c client.Client, ns, name string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		_, err := configMap(c, ns, name)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("ConfigMap %s/%s still there (%v)", ns, name, err)
	})
}

func createNamespace(t testing.TB, c client.Client, name string) {
	t.Helper()
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	require.NoError(t, c.Create(context.Background(), ns))
}
