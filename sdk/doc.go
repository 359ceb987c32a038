// Package sdk is fleetgraph's front door: a Hub compiles
// ResourceGraphDefinitions, fans each generated CRD out to every cluster a
// multicluster-runtime provider engages, and reconciles the graph's
// instances in each cluster, children in the instance's own cluster. A hub
// graph, whose resources carry a target, is served on the hub instead: its
// CRD and instances live on the hub, and each resource is written in the
// engaged cluster its target names (Options.Targets says which clusters
// targets may name).
//
// A platform embeds a Hub in its own manager rather than deploying a
// controller per cluster: it gives a multicluster-runtime provider to its
// manager (mcmanager.WithMultiCluster), creates the Hub with
// NewHub(nil, opts) so that it serves the manager's provider, calls
// SetupWithManager and starts the multicluster manager. ExampleNewHub is
// that code, taken from examples/embed-manager, which is tested; Hub.Run
// runs a Hub standalone instead. With no provider anywhere the Hub runs in
// single-cluster mode: the manager's own cluster is hub and spoke, with the
// same code. WaitServable and Subscribe tell when clients can create a
// graph's instances on a cluster.
//
// The order of events on a cluster is fixed: when it is engaged, every
// registered graph's CRD is applied there and must be established before
// that graph's watches start there; when its engagement context ends,
// everything started for it stops and it leaves the fleet status.
//
// A graph has one source, Go (RegisterGraph) or an RGD object the RGD
// controller claims (Options.RGDs.Selector), and only that source replaces or
// removes it; one graph serves a given instance kind. Removing a graph
// never strands an instance: its admission policy leaves every spoke first,
// then the instances it holds are finalized when deleted (or, with the
// orphan option, released), retried until done.
package sdk
