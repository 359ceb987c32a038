// Package hubgraph serves hub graphs: graphs whose resources carry a
// target (graph.Graph.IsHubGraph). Their CRD is applied on the hub cluster
// only and their instances live there; each resource is written in the
// cluster its target names, and in the hub cluster when it has none.
//
// # Why a runtime of its own
//
// The spoke runtime (internal/spoke) serves one graph on one cluster: its
// caches, owned index, memory of applies and fairness are all per cluster,
// and an instance and its children share it. A hub instance's children are
// spread over several clusters, so this package reconciles each instance
// with a client and a cache per target cluster (the engaged cluster of that
// name), and reuses the spoke runtime's contract: the same ownership labels
// (package contract), the same states and conditions, the same finalizer.
//
// # Safety before any write
//
// Targets read only the instance (the compiler refuses anything else), so
// every target of an instance is resolved before anything is written. A
// literal target must name an engaged cluster; a target computed from the
// instance must also be allowed by the platform (Policy: a label selector
// and/or a hook; without one, computed targets are refused) and by the
// RGD's spec.target.allowedClusters. A refused instance goes to ERROR
// with a TargetsAllowed=False condition naming the resource, the cluster
// and the rule, and nothing of it is written anywhere. A target naming a
// kubeconfig Secret (KREP-012) is mapped to its cluster by the provider
// (Clusters.SecretCluster) and then checked as a named one.
//
// Before the first write to a cluster, the instance records that cluster
// in its AnnotationClusters, with the finalizer: deletion and pruning look
// there, so a restart never forgets a cluster it wrote to.
//
// # Stamped at admission
//
// Writing the finalizer and clusters is a round trip of its own before any
// child, so the hub has them written by the API server instead, in the
// request that creates the instance (stamp.go): a MutatingAdmissionPolicy
// on the hub (Options.Stamp; the sdk binds it with hub.Admissions, behind
// the same probe as spokes') adds the finalizer and the clusters every
// instance writes to whatever its spec, the hub's own and the literal
// targets'. An instance that arrives with both is not written before its
// children. The policy is an optimisation only: where it is missing (an API
// server without the API, a policy not bound yet or disabled, a graph
// updated since), and for the clusters that computed and Secret targets
// name, the reconcile writes them itself first, as before. The stamp names
// clusters before any check, so a new instance that is refused holds the
// finalizer: the reconcile takes it off once every cluster the instance
// names answers, live, that it holds none of its children. While one is
// not engaged or does not answer (a literal target naming a cluster
// outside the fleet), it stays, and the deletion waits for that cluster
// like that of any instance whose recorded cluster went away
// (Options.AbandonAfter ends the wait).
// The policy goes before a removal counts the instances that hold the
// finalizer, and when the graph stops being a hub graph.
// Every child carries the spoke runtime's ownership labels plus LabelHub
// (the identity of the hub that wrote it); an existing object without
// those labels naming this instance is never written or deleted.
//
// # Drift and values across clusters
//
// Each reconcile walks the DAG level by level; the nodes of one level do
// not read each other and are evaluated and written at once, and so are
// the iterations of one node, each in its own cluster (at most
// maxNodesAtOnce writes in flight per reconcile): a copy in a cluster that
// hangs holds neither its siblings nor the level's other nodes. A child
// is written with server-side apply (forced) and the API server's answer
// is handed to the expressions that read it, whatever cluster it came
// from. A metadata-only informer of each child
// kind in each target cluster (the cluster's own cache, shared with the
// spoke runtime) requeues the owning hub instance when one of its children
// changes or goes, which repairs drift and re-evaluates readyWhen.
//
// External references are read live, and what they read is watched
// (external_refs.go, external_watch.go): each instance's last evaluation
// records its references and the versions it saw, and a handler per
// (cluster, kind) on the same metadata informers requeues the instances
// whose view of an object changed. Memory follows the instances (one entry
// per externalRef node, a bounded number of versions each), and a handler
// goes when nothing reads there or its cluster leaves the fleet.
//
// # Our own writes bring nothing back
//
// The echo of the hub's own writes would otherwise reconcile every
// instance again and apply every child again. The hub remembers its last
// write of each instance until the instance watch delivers it (an event
// delivered while a write of that instance is in flight waits for the
// write's answer, for the watch may be faster than the answer), and the
// version each apply returned (apply_memory.go): those events requeue
// nothing, while any other version, a deletion or a write racing ours
// does. A child whose answer nothing reads (graph.Graph.Reads) and whose
// desired form is unchanged since an apply that still stands is not sent
// again, until Options.Resync has passed. So every path that must come
// back asks for it: a wait (a child not ready, an unreachable cluster, a
// refused target) with RequeueAfter, a conflict on our finalizer write
// too; none relies on the event of its own write. A new instance costs one
// apply per child and one status write, all in one reconcile (one write
// more, of its finalizer and clusters, where it was not stamped).
//
// # Tenants
//
// The graph's Limits bound each reconcile as on spokes (limits.go), and
// the controller's queue is the spoke runtime's fair queue (fair.go):
// namespaces take turns, and a reconcile stopped by a limit is retried at
// its namespace's pace.
//
// # Deletion
//
// Behind contract.Finalizer, children are deleted in reverse DAG waves
// across every cluster the instance recorded: a wave starts only when the
// previous one is gone everywhere. An unreachable cluster holds the
// deletion, and the instance says which cluster it waits for; with
// Options.AbandonAfter, only for that long (abandon.go): the deletion
// then goes on without that cluster and leaves the instance's children
// there, reported in an event and the log.
package hubgraph
