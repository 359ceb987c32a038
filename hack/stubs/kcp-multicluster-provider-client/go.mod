// An empty stand-in for github.com/kcp-dev/multicluster-provider/client.
//
// multicluster-provider v0.8.0 requires its nested client module at a zero
// pseudo-version and points it at ./client with a replace directive, which
// only applies inside that repository; the module proxy serves no version
// of it. No package fleetgraph builds imports it, but `go list -m all` (and
// tools built on it) must resolve every module in the graph, so the main
// module replaces it with this empty one. Downstream modules are unaffected:
// replace directives apply only in the main module.
module github.com/kcp-dev/multicluster-provider/client

go 1.24
