// Package spoke is fleetgraph's per-cluster instance runtime, usable on its
// own: it serves compiled resource graphs (package graph) on the clusters
// it is given, with kro's instance semantics. For each instance of a
// graph's generated kind it applies the children in DAG order with
// server-side apply, projects status, and deletes the children in reverse
// order behind a finalizer when the instance goes.
//
// # Why a package of its own
//
// The sdk package is the whole product: a hub that compiles
// ResourceGraphDefinitions, fans their CRDs out to a fleet and serves their
// instances there. Some platforms need only the last part:
//
//   - a platform that runs its own agent inside each cluster, which learns
//     of the graphs some other way and must serve their instances locally;
//   - a platform whose CRDs arrive by GitOps (or any installer) rather than
//     from a hub's fan-out.
//
// Such a platform adds a Runtime to the controller-runtime or
// multicluster-runtime manager it already runs and hands it compiled
// graphs. It gets what the hub's spokes get: ownership by labels (an
// object that is not the instance's is never written or deleted), drift
// repaired from watch events and a periodic resync, a memory of its
// applies that skips writes that would change nothing, workers shared
// fairly among clusters and namespaces, optional confinement of each
// instance to its namespace, collection of children whose instance is
// gone, and the evaluation limits the graph was compiled with. This
// package imports neither sdk nor any hub package: it does not install
// CRDs, compile graphs or decide revisions. The caller does, and says what
// it decided in the Version it serves.
//
// # Wiring
//
// In a cluster's own agent, the manager's cluster is the only one:
//
//	rt := spoke.New(spoke.Options{})
//	if err := rt.SetupWithManager(mgr); err != nil { // serves mgr's cluster
//		return err
//	}
//	g, err := graph.Compile(rgd, graph.Options{})
//	...
//	_ = rt.Serve(spoke.Version{Graph: g}) // before or after mgr starts
//	return mgr.Start(ctx)
//
// With a multicluster-runtime manager, the provider's clusters are served,
// each as it is engaged and until it leaves:
//
//	_ = mcMgr.Add(rt)
//
// The graph's CRD must be established on a cluster before its instances
// can be served there; a gate (Runtime.SetGate) holds a graph back on a
// cluster until the caller says so (the hub applies the CRD there). Without a gate the
// runtime retries its watch with backoff until the kind is served. The hub
// also installs an admission policy that stamps the runtime's finalizer on
// new instances; where it is absent, the runtime adds the finalizer itself,
// one write more per new instance.
//
// Providers that create the clusters (cluster.New) should give each
// TrimCache, which keeps the caches small, and ReportWatchErrors, which
// shows failing watches on the instances they hide changes from.
package spoke
