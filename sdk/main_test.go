package sdk_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// How the package's integration tests are run (issue 25: the package took
// 11 minutes with one fleet per test, one test at a time):
//
//   - A test that only registers graphs from Go on an ordinary fleet (a
//     hub and two spokes, RGD controller off) calls t.Parallel and uses the
//     package's shared fleet, sharedFleet(t) (helpers_test.go). It serves
//     graphs of its own name and kind (renamedRGD) and names its instances
//     so that no other test's children collide with them: tests on the
//     shared fleet share its API servers, never a graph, a kind or an
//     object.
//     For example:
//
//	t.Parallel()
//	fleet := sharedFleet(t)
//	provider, err := fleet.NewProvider(ctx)
//	require.NoError(t, err)
//	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
//	rgd, gvk := renamedRGD(readRGD(t, "testdata/webapp-rgd.yaml"), "my-webapp", "MyWebApp")
//	require.NoError(t, h.RegisterGraph(ctx, rgd))
//	createWhenServed(t, c1, instance(gvk, "my-app", map[string]any{"name": "my-app"}))
//
//   - A test that needs a fleet to itself starts one with
//     fgtesting.StartFleet and says why in a comment: it stops, freezes or
//     hangs a spoke, installs a CRD the others must not see, runs the RGD
//     controller (which claims every RGD on its hub cluster), creates
//     GraphRollouts (every Hub reads all of them there), uses a provider
//     that reads Secrets on the hub, or runs replicas. It still
//     calls t.Parallel: its API servers are its own.
//   - A test does not call t.Parallel when its subject is how soon
//     something happens (a probe's bound, a takeover within a lease), or
//     when it checks process-wide state: every goroutine (goleak) or the
//     metrics registry's series per cluster. Go runs such tests first, one
//     at a time, before any parallel test starts, so every second of them
//     is a second of the package's wall time: today they are the fleet
//     scenarios (hub_integration_test.go: goleak, metrics), the probe
//     bounds (health_integration_test.go) and TestReplicas' takeover, about
//     100 s in all on a loaded 2-core machine. Such a test does not
//     wait out a default timer that is not its subject: it sets the option
//     short (runFleetScenario's DepartureGrace).
//
// A test that needs a fleet of its own for any other reason (hub graphs,
// a restart, a frozen spoke) is parallel. Check the split with
// `go test -json`: a test whose "run" comes before the first "cont" ran
// alone.
//
// Parallel tests must not set environment variables (t.Setenv panics
// there) or package variables.

// scaleReplica, set by BenchmarkScale's file (integration tag), runs this
// process as one of its hub replicas (FLEETGRAPH_SCALE_REPLICA) instead of
// the tests, and returns the exit code.
var scaleReplica func() int

// scaleReplicaEnv names the variable that makes this process the
// BenchmarkScale replica of that ID.
const scaleReplicaEnv = "FLEETGRAPH_SCALE_REPLICA"

// stopSharedFleet stops the fleet the integration tests share, if one was
// started.
var stopSharedFleet func() error

// defaultParallel is how many of the package's parallel tests run at once
// unless -parallel says otherwise. They spend most of their time waiting
// on API servers (a manager starting, a CRD being established, discovery
// catching up, a rollout's soak), so more of them than the machine has
// cores fit. Each own fleet is 2 to 6 API servers of ~320 MB.
const defaultParallel = 4

// TestMain sets up logging, runs defaultParallel parallel tests at once
// unless -parallel is given, and stops the shared fleet at the end.
//
// It registers nothing in client-go's process-wide scheme, and no Hub does
// (TestHubsLeaveClientGosSchemeAlone): a test that reads or writes typed
// RGDs or hub types gives its client a scheme of its own
// (fgtesting.NewScheme()).
func TestMain(m *testing.M) {
	if scaleReplica != nil && os.Getenv(scaleReplicaEnv) != "" {
		os.Exit(scaleReplica()) // this process is one of BenchmarkScale's hub replicas
	}
	fgtesting.SetupLogs()
	flag.Parse()
	parallelGiven := false
	flag.Visit(func(f *flag.Flag) { parallelGiven = parallelGiven || f.Name == "test.parallel" })
	if !parallelGiven {
		_ = flag.Set("test.parallel", strconv.Itoa(max(defaultParallel, runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	if stopSharedFleet != nil {
		if err := stopSharedFleet(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the shared fleet:", err)
			code = 1
		}
	}
	os.Exit(code)
}
