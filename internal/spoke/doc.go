// Package spoke is the plumbing of the per-cluster instance runtime that
// the public package spoke (github.com/fleetgraph/fleetgraph/spoke) wraps
// and documents: one of the two drivers of the instance engine (package
// instance), the one whose instances and children all live in one
// cluster. The engine evaluates, applies, remembers, claims, confines,
// prunes, deletes, collects orphans and writes status; this package
// decides which instances of which graph version it does that for, on
// which cluster, and when.
//
// # Where things are
//
// The Runtime (runtime.go) keeps the engaged clusters (engagements.go),
// each as an instance.Cluster whose shared handlers every graph's member
// there uses, and, per graph, its versions and which one serves each
// cluster (versions.go, reconsider.go). Each version has a controller
// (controller.go): a work queue, workers, and one member per cluster. A
// member (member.go) is one graph served on one cluster: an engine whose
// every node lives in that cluster (instance.Engine.HomePlacement), and
// the driver's own parts, listed on member. Package fair holds the queue's
// order, the per-namespace retry limits and the slots; package
// internal/cacheopts the cluster options providers apply (cache trimming,
// watch-error reporting).
//
// # Why it is built this way
//
// A fleet has slow and dead members. Nothing here holds a lock while it
// waits for a cluster: every (graph, cluster) pair is started in its own
// goroutine bound to that cluster's engagement context, so one spoke
// whose API server hangs delays only its own instances. When a cluster is
// disengaged (its context is cancelled) or a graph is stopped, everything
// started for the pair ends with it: the member's and its engine's
// handlers are removed and workers drop its requests. A graph's workers
// are shared among its clusters: one cluster has at most its share in
// flight (Options.Workers divided by the clusters served), and within a
// cluster the share is divided among the namespaces that have work, one
// slot kept for a namespace with nothing in flight (isolation.go, package
// fair); retries of reconciles stopped by one of the graph's limits are
// paced per namespace (sync.go's limitFailure).
//
// multicluster-runtime engages a runnable only with clusters that arrive
// after it was added. Graphs are registered while the process runs, so
// the Runtime keeps its own registry of engaged clusters and replays it to
// each graph it starts.
//
// Reading instances is the driver's: they come from the cluster's
// informer cache, with the graph's defaults (instance.Engine.Defaulted)
// and our own newer write when the cache is behind it
// (instance.Writes). Once a kind holds a large instance
// (Config.InstanceHeadsAbove), its reconciles are also started by a
// metadata-only watch of the kind, which no tenant's large instances can
// hold back; a reconcile that finds the cache behind it waits briefly,
// then reads the instance itself (instance_heads.go). Updates that only
// touch status, our finalizer or our child kinds are our own writes and
// start nothing (handlers.go). A re-created CRD brings the instance watch
// back at once (crd.go).
//
// For the reference workload (three children per instance) a new
// instance costs four requests in one reconcile: three applies and the
// status (five without the admission policy that stamps the finalizer and
// child kinds at create).
//
// # What the hub holds per spoke
//
// In the cluster's cache (the provider's, shared by every graph): one
// informer per graph's instance kind, with the full instances, and the
// engine's metadata-only informers of child kinds (cluster-wide, so that
// objects that are not ours are seen before they would be overwritten).
// cacheopts.TrimCache, given to the provider, drops what the runtime never
// reads there. Outside it, per graph served on the spoke, the engine's
// memory (what each child was last applied as, the owned index, external
// references' scoped informers; see package instance) and the member's:
// each instance's state, the metadata watch's heads, the cluster values
// last seen. Everything per instance is forgotten when the instance is
// gone, and everything per (graph, spoke) when the graph stops being
// served there.
package spoke
