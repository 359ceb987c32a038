// Package hubgraph serves hub graphs: graphs whose resources carry a
// target (graph.Graph.IsHubGraph). Their CRD is applied on the hub cluster
// only and their instances live there; each resource is written in the
// cluster its target names, and in the hub cluster when it has none.
//
// It is one of the two drivers of the instance engine (package instance),
// the other being the spoke runtime (internal/spoke). The engine does for
// a hub instance what it does for a spoke instance (evaluation, applies
// and their memory, ownership and adoption, confinement, limits, external
// references, pruning, deletion waves and abandonment, orphan collection,
// status); it is told where each child lives by the instance's plan (a
// Placement, targets.go). This package keeps what is a hub graph's own:
//
//   - targets (targets.go): every target of an instance is resolved before
//     anything is written, and checked: a literal target must name an
//     engaged cluster; a computed one must also be allowed by the platform
//     (Policy: a label selector and/or a hook; without one, computed
//     targets are refused) and by the RGD's spec.target.allowedClusters. A
//     target naming a kubeconfig Secret (KREP-012) is mapped to its cluster
//     by the provider (Clusters.SecretCluster) and then checked as a named
//     one. A refused instance goes to ERROR with a TargetsAllowed=False
//     condition naming the resource, the cluster and the rule (status.go),
//     and nothing of it is written anywhere;
//   - the clusters each instance may have children in (reconcile.go):
//     recorded on it, in AnnotationClusters, with the finalizer and the
//     graph's child kinds, before the first write to a new cluster, so
//     that pruning and deletion look there after a restart too;
//   - the admission stamp (stamp.go): a MutatingAdmissionPolicy on the hub
//     adds the finalizer, the child kinds and the clusters every instance
//     writes to (the hub's own and the literal targets') in the request
//     that creates it, so that a new instance costs no write of its own;
//     a refused new instance that holds the stamped finalizer has it taken
//     off once every cluster it names answers, live, that it holds none of
//     its children;
//   - the instance watch and controller (server.go, instances.go), whose
//     queue is the fair queue every driver uses (fair.go);
//   - the clusters as the engine reaches them (clusters.go): one handle per
//     engagement, shared by every graph; a cluster that left or was engaged
//     anew is forgotten by every engine, and the instances that had
//     children or references there are reconciled again;
//   - the fleet variable (fleet.go) and removal (removal.go).
//
// A child of a hub instance carries the engine's ownership labels plus
// LabelHub (the identity of the hub that wrote it: Options.HubName), so
// that two hubs writing into one cluster never take each other's
// children.
//
// # What differs from a spoke instance, and why
//
//   - A deletion must reach clusters besides the instance's own, any of
//     which may hang: the instance says DELETING before it calls them, and
//     Options.AbandonAfter (the engine's Config.AbandonAfter) bounds how
//     long an unreachable one holds it. A spoke instance's children share
//     its cluster: there is nothing to abandon.
//   - The cluster variable (cluster.name, labels, values) is the spoke
//     driver's: a hub instance's resources span clusters, and a hub graph
//     reads the fleet variable instead (the instance lives on the hub,
//     which is not one of the spokes fleet.clusters lists).
//   - Orphans are looked for, after a restart, in the clusters the
//     graph's literal targets name and in every cluster a live instance
//     writes to (its reconciles watch there): a cluster only a computed
//     target named, whose every instance went while no hub watched, is
//     not looked at.
package hubgraph
