// Package status reads what a fleetgraph hub publishes on its cluster and
// turns it into one view of the fleet: for each graph, each cluster's CRD
// state, the revision served and the one it should serve, why they differ
// from the latest, instance counts (total, ready, in ERROR) and
// reachability; for a hub graph, the clusters its instances write to.
//
// It computes none of it: the hub does, in one place, and this package
// renders what the hub wrote. It needs no access to spokes. Its sources,
// all on the hub cluster:
//   - the hub's status records (ConfigMaps labelled
//     fleetgraph.dev/fleet-status-of, kube-system by default): every
//     cluster as the hub sees it. A lone hub keeps one per graph; with hub
//     replicas each keeps its own, and a cluster is read from the freshest
//     record that serves it, as the hub merges them;
//   - the ResourceGraphDefinition's status: conditions,
//     lastIssuedRevision and status.fleet (counts, the revisions served,
//     a one-line account, at most 20 clusters unhealthy and 20 that serve
//     another revision than the latest, each with why, and a hub graph's
//     targets). The hub writes it from every replica's record merged: a
//     cluster it lists as ReplicaGone (its replica stopped) is shown so;
//   - the GraphRollout that rules the graph (the oldest naming it): the
//     rollout's phase, and each cluster's wave and hold.
//
// A number the hub did not publish is absent from the JSON (and "-" in a
// table), never a sentinel.
package status
