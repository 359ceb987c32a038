// Package spoke is the plumbing of the per-cluster instance runtime that
// the public package spoke (github.com/fleetgraph/fleetgraph/spoke) wraps:
// it runs compiled graphs for the instances that live in the clusters it is
// given. One Runtime serves every registered graph on every engaged
// cluster, and the same code path serves single-cluster mode (one cluster,
// engaged under the empty name) and a fleet of spokes engaged by a
// multicluster-runtime provider.
//
// # Where things are
//
// The Runtime (runtime.go) keeps the engaged clusters (engagements.go) and,
// per graph, its versions and which one serves each cluster (versions.go,
// reconsider.go). Each version has a controller (controller.go): a work
// queue, workers, and one member per cluster. A member (member.go) is one
// graph served on one cluster, made of parts named after their files; its
// doc comment lists them. Package fair holds the queue's order, the
// per-namespace retry limits and the slots; package internal/cacheopts the
// cluster options providers apply (cache trimming, watch-error reporting).
//
// # Why it is built this way
//
// A fleet has slow and dead members. Nothing here holds a lock while it waits
// for a cluster: every (graph, cluster) pair is started in its own goroutine
// bound to that cluster's engagement context, so one spoke whose API server
// hangs delays only its own instances. When a cluster is disengaged (its
// context is cancelled) or a graph is stopped, everything started for the pair
// ends with it: event handlers are removed and workers drop its requests.
// A graph's workers are shared among its clusters: one cluster has at most
// its share in flight (Options.Workers divided by the clusters served), so a
// hung cluster holds only its own share, and every call a reconcile makes to
// a cluster is bounded by Options.CallTimeout. Within a cluster the share is
// divided among the namespaces that have work in the same way, and one slot
// is kept for a namespace with nothing in flight, so a tenant whose
// instances are slow to reconcile delays only itself; the queue hands
// requests out in turns of clusters and namespaces, and failed requests are
// retried under a rate limit per namespace; the retries of reconciles
// stopped by one of the graph's limits are paced per namespace, each ten
// times what it took after the namespace's previous one, so a tenant whose
// instances spend their whole budget at every try holds at most a tenth of
// a worker, however many instances it has (package fair). A watch a reconcile needs
// starts in the background; the reconcile waits for its initial list no
// longer than for any other call.
//
// multicluster-runtime engages a runnable only with clusters that arrive after
// it was added. Graphs are registered while the process runs, so the Runtime
// keeps its own registry of engaged clusters and replays it to each graph it
// starts.
//
// Reconciling is shaped by the API server's cost, not by convenience:
//
//   - Instances are read from the cluster's informer cache. Once a kind
//     holds a large instance (Options.InstanceHeadsAbove), its reconciles
//     are also started by a metadata-only watch of the kind, which no
//     tenant's large instances can hold back; a reconcile that finds the
//     cache behind it waits briefly, then reads the instance itself. A
//     kind of small instances is spared that second watch
//     (instance_heads.go).
//   - Children are written with one server-side apply each (field manager
//     "fleetgraph", forced), and the apply response is what dependents and
//     readyWhen see. A child whose desired form has not changed and that
//     nobody else touched since our last apply is not sent again: the Runtime
//     remembers the resourceVersion each apply returned and watches children
//     through metadata-only informers, so a foreign change or a deletion
//     (drift) invalidates that memory and requeues the owning instance.
//   - Our own writes to an instance are remembered until the cache catches up,
//     so a reconcile never works from an older copy than one it wrote.
//   - Status is patched only when it changed.
//   - A new instance needs our finalizer and the list of its child kinds
//     before any child is applied. contract.AdmissionPolicy makes the API server add
//     both in the create request itself (hub.FanOut installs it next to the
//     CRD); where that API is missing the Runtime adds them in one write.
//   - An instance's children are found in an index kept from the child
//     watches and our own applies, so pruning costs no list and no write of
//     the instance.
//
// For the reference workload (three children per instance) a new instance
// costs four requests in one reconcile: three applies and the status (five
// without the admission policy).
//
// # Ownership
//
// Children carry labels naming the graph, node and instance
// (contract.LabelGraph, contract.LabelNodeID, contract.LabelInstanceUID, ...); the instance lists the
// kinds its children may have (contract.AnnotationChildKinds), so children of a kind
// the graph dropped are still found, after a restart too, and pruned. Those
// two drive pruning and deletion. Nothing uses owner references, so nothing
// depends on the cluster's garbage collector, and no reference crosses
// clusters. A child is
// pruned only after every desired child was applied without error; an
// instance's children are deleted in reverse DAG waves behind contract.Finalizer.
// Children the finalizer never got to (it was removed by hand) are
// collected once their instance is confirmed gone (orphans.go).
//
// Nothing that is not ours is written or deleted. Before a child is first
// applied, the metadata cache of its kind is consulted: an existing object
// that our records (the owned index, which remembers each child's UID) or
// its labels do not give to this instance is left alone, and the instance
// goes to ERROR with reason OwnershipConflict naming the object and its
// owner (kro calls this an ApplySet conflict). Options.AdoptUnowned lets an
// instance take over objects without an owner label. Deletes carry the
// child's UID as a precondition. A child being deleted is not applied to:
// the instance waits, IN_PROGRESS with kro's ResourceDeleting reason. Child
// kinds are watched cluster-wide (metadata only) precisely so that objects
// without our labels are seen before they are overwritten.
//
// # Drift
//
// Events drive reconciling, and each instance also has a full resync every
// Options.Resync (jittered) that applies every child regardless of the
// memory, which puts back drift no event reported. External references are
// watched no wider than they name (one object, or a label selector).
//
// A watch that fails in the background (the hub's identity lost list or
// watch of a kind, the kind is gone) is only retried by client-go, and
// changes it would report go unseen. With cacheopts.ReportWatchErrors given
// to the provider as a cluster.Option, every list and watch call of the
// cluster's informers (and of the runtime's own external-reference
// informers) is observed: the instances of the graphs that use a failing
// kind carry ResourcesWatched=False naming it and its error, until a list
// or watch of that kind succeeds, and the failures are counted per cluster
// and kind (watch_errors.go).
//
// # What the hub holds per spoke
//
// In the cluster's cache (the provider's, shared by every graph):
//
//   - one informer per graph's instance kind, with the full instances;
//   - one metadata-only informer per child kind (PartialObjectMetadata,
//     cluster-wide, so that objects that are not ours are seen before they
//     would be overwritten), and one on CRDs, to notice a re-created CRD.
//
// The runtime reads nothing of managedFields there but the managers' names
// of children. cacheopts.TrimCache, given to the provider as a
// cluster.Option, drops
// the rest: an instance's managedFields and kubectl's last-applied
// annotation whole, of a child's managedFields all but the managers' names,
// and it makes objects share what they repeat (keys, kinds, our labels'
// values, conditions alike).
//
// Outside the cache, per graph served on the spoke:
//
//   - one full-object informer per external reference scope (one object by
//     name, or a label selector in a namespace), stopped when no instance
//     refers to it any more; nothing else of a referenced kind is held;
//   - per child we applied: the hash of its desired form, the
//     resourceVersion and, if something in the graph reads the node's
//     observed value (another node, its readyWhen, the status:
//     graph.Graph.Reads), the API server's answer to our last apply,
//     without managedFields, as JSON compressed against the first answer of
//     its kind (about 100 bytes for a Deployment's answer of 1.3 KB;
//     decoded only when a reconcile reuses it). A reconcile likewise holds
//     the answers of a node's children until the node is done only when
//     something reads them; children are rendered and applied in batches
//     of at most 8 MiB;
//   - per child we own: its owner's UID, node id and its own UID (the owned
//     index, which finds an instance's children without a list);
//   - per instance: its state, the resourceVersion last seen, its next
//     resync, its external references, and our last write of it until the
//     cache has caught up (at most 30 seconds).
//
// Everything per instance is forgotten when the instance is gone, and
// everything per (graph, spoke) when the graph stops being served there.
//
// # Wiring
//
//	rt := spoke.New(spoke.Options{})
//	_ = mcMgr.Add(rt)                             // engages every cluster the provider reports
//	_ = rt.Serve(spoke.Version{Graph: compiled}) // before or after the manager starts
//
// In single-cluster mode call rt.Engage(ctx, "", localCluster) yourself
// (the public package's SetupWithManager does). Options.Gate lets the
// caller hold a graph back on a cluster until its CRD is established
// there.
package spoke
