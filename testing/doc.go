// Package testing gives fleetgraph's users and its own tests clusters to run
// against, at two levels of realism.
//
// A real local fleet: StartFleet (for tests) and NewFleet (for programs such
// as the quickstart) start a hub and N spokes, each a real kube-apiserver and
// etcd through controller-runtime's envtest, in parallel and on loopback
// only. A Provider is a multicluster-runtime provider over any set of
// rest.Configs (the fleet's spokes by default) to which clusters can be added
// and from which they can be removed while a manager runs; removal cancels
// that cluster's engagement, exactly as a real provider signals it.
// WriteKubeconfigs writes a fleet's kubeconfigs for kubectl: one with a
// context per cluster, named after it, and one per cluster.
//
// For benchmarks against a floor (docs/performance.md): NoRateLimit gives
// the system under test and its floor clients without a client-side rate
// limit; a Cluster's CPU and Load say what a phase cost its kube-apiserver
// and etcd, and where the server's time went.
//
// Fake clusters: FakeProvider engages in-memory clusters backed by
// controller-runtime's fake client, for unit tests that must run in
// milliseconds. Their limits are stated on FakeCluster.
//
// The real fleet needs kube-apiserver and etcd binaries. They are found in
// $KUBEBUILDER_ASSETS, else in the cache directory that `make envtest-assets`
// (hack/envtest/build.sh) fills; see AssetsDir.
//
// Import it under a name that does not shadow the standard library:
//
//	import fgtesting "github.com/fleetgraph/fleetgraph/testing"
package testing
