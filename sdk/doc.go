// Package sdk is fleetgraph's front door: a Hub compiles
// ResourceGraphDefinitions, fans each generated CRD out to every cluster a
// multicluster-runtime provider engages, and reconciles the graph's
// instances in each cluster, children always in the instance's own cluster.
//
// A platform embeds a Hub in its own manager rather than deploying a
// controller per cluster:
//
//	mgr, _ := mcmanager.WithMultiCluster(existingManager, provider)
//	h, _ := sdk.NewHub(provider, sdk.Options{})
//	_ = h.SetupWithManager(mgr)
//	_ = h.RegisterGraph(ctx, rgd) // or let the RGD controller pick RGDs up
//	_ = mgr.Start(ctx)
//
// or runs one standalone with Hub.Run. A nil provider is single-cluster
// mode: the manager's own cluster is hub and spoke, with the same code.
//
// The order of events on a cluster is fixed: when it is engaged, every
// registered graph's CRD is applied there and must be established before
// that graph's watches start there; when its engagement context ends,
// everything started for it stops and it leaves the fleet status.
//
// A graph has one source, Go (RegisterGraph) or an RGD object the RGD
// controller claims (Options.RGDSelector), and only that source replaces or
// removes it; one graph serves a given instance kind. Removing a graph
// never strands an instance: its admission policy leaves every spoke first,
// then the instances it holds are finalized when deleted (or, with the
// orphan option, released), retried until done.
package sdk
