// Package instance runs the instances of a compiled graph: it is the one
// engine under the two ways fleetgraph serves instances, the spoke runtime
// (internal/spoke: every instance and its children in one cluster) and hub
// graphs (internal/hubgraph: instances on the hub, each resource in the
// cluster its target names). Both are drivers: they find instances, decide
// when to reconcile them and where each child goes; the engine does what a
// reconcile does to an instance and its children, the same way for both.
//
// # Why it exists
//
// The two drivers were written apart and implemented every rule about
// instances twice: applying and remembering applies, ownership, namespace
// confinement, limits, external references, deletion, status. The two
// copies drifted (adoption and orphan collection worked on spokes only,
// limits stopped a reconcile at different points, three resync defaults).
// Every rule a tenant relies on now has one implementation, tested through
// both drivers by one table (shared_integration_test.go).
//
// kro draws the same line between pkg/runtime, which evaluates one
// instance, and its instance controller, which orchestrates; here the
// engine also writes, because where a child is written, how its apply is
// remembered and who may own it are the rules that must not differ.
//
// # What it owns, per instance
//
//   - evaluation of the graph level by level (Evaluate, evaluate.go): the
//     nodes of a level at once, the items of a forEach at most
//     Options.ItemConcurrency at a time, a level's children counted
//     against Limits.MaxChildren before any is written, rendered children
//     applied in batches; a cluster that does not answer holds only what
//     lives there and what depends on it;
//   - apply with its memory (apply.go, apply_memory.go, observed.go): one
//     server-side apply per child, skipped when the desired form is
//     unchanged and nothing touched the child since; the API server's
//     answer kept, compressed, for the nodes something reads; a full resync
//     of each instance every Options.Resync (resync.go);
//   - ownership (owner.go, claim.go, owned.go, children.go): an existing
//     object is written only when it is the instance's (our apply record,
//     or our labels on an object our field manager wrote), or, with
//     Options.AdoptUnowned, when it has no owner label; labels alone, which
//     anyone can copy, never make an object ours, and an object that only
//     copies them is reported and left alone;
//   - namespace confinement of children and external references
//     (confine.go);
//   - the graph's per-instance limits (limits.go): one graph.Budget per
//     reconcile charged by every evaluation, status included;
//   - external references and the index of who reads what (external*.go),
//     watched no wider than they name;
//   - pruning, deletion in reverse DAG waves across every cluster the
//     instance may have children in, abandonment of a cluster that stays
//     unreachable, and release (prune.go, deletion.go, abandon.go,
//     release.go);
//   - orphan collection (orphans*.go): children whose instance is gone,
//     in every cluster;
//   - status (status.go, conditions.go, watch_errors.go): kro's states and
//     conditions, a driver's own conditions, the RGD's projections and own
//     conditions; the bookkeeping written on an instance before its
//     children (finalizer, child kinds, a driver's annotations:
//     instance_writes.go); the memory of our own writes of an instance
//     (writes.go) and of the instances the driver's watch delivered
//     (instances.go).
//
// # The driver interface
//
// The engine is cluster-agnostic per child. A driver gives it, per
// reconcile, a Placement: for a node (and an item of a forEach), the
// Cluster it lives in, which carries the client, the caches, the API
// reader and the event recorder of that cluster; and, to prune, delete or
// release, the clusters an instance may have children in (Reach). A
// driver makes one Cluster per engagement of a cluster (cluster.go) and
// hands the same one to every engine there, which share one event
// handler per metadata informer of its cache (fanout.go). The memory of
// what was written in a cluster belongs to the engine, per Cluster handle
// (place.go): a new handle under a name (a cluster engaged anew) starts
// with none, and ForgetCluster drops everything remembered of one cluster,
// so that every instance applies there again. The spoke driver places
// every node in the instance's own cluster (HomePlacement); the hub-graph
// driver places each node where its resolved target says.
//
// Back to its driver the engine reaches through Config: Enqueue to
// reconcile an instance again, InstancesListed before it condemns an
// orphan, Released while a graph is removed with its instances kept, and
// WatchHealthChanged when a watch it needs starts or stops failing. The
// driver tells the engine what its instance watch delivers (Instances)
// and asks it which deliveries are our own writes coming back (Writes).
//
// A driver keeps what is truly its own: for the spoke runtime, the
// engaged clusters, the versions of each graph and which one serves each
// cluster, the instance watches and the work queues; for hub graphs, the
// resolution of targets and the platform's policy on them, the admission
// stamp, the clusters recorded on each instance and the fleet variable.
//
// # What it does not import
//
// The engine imports the leaves (contract, cacheopts, crdschema) and the
// compiler's graph package, nothing above them: no controller, manager or
// work queue, no hub-side controller, neither public package (hub, spoke),
// not sdk, and neither driver (hack/check/deps.sh holds it to that). It
// starts no goroutine that outlives the context its driver gives it.
package instance
