// Package status reads what a fleetgraph hub publishes on its cluster and
// turns it into one view of the fleet: for each graph, each cluster's CRD
// state, served and desired revision, instance counts and reachability.
//
// It needs no access to spokes. Its sources, all on the hub cluster:
//   - the ResourceGraphDefinition's status: conditions, lastIssuedRevision
//     and status.fleet (counts, and at most 20 unhealthy clusters with
//     their state and message);
//   - GraphRevisions (fleetgraph.dev): which revision a generation is;
//   - the GraphRollout that rules the graph (the oldest naming it): every
//     placed cluster's wave and served revision, the target and stable
//     revisions;
//   - the hub replicas' status records (ConfigMaps labelled
//     fleetgraph.dev/fleet-status-of, kube-system by default): every
//     cluster's CRD state, served generation and instance counts. A hub
//     writes them when it runs as one of several replicas
//     (sdk.Options.Replica, fleetgraph-hub --replicas-shard).
//
// Where none of these lists a healthy cluster by name, the view counts it
// without a row; what no source publishes (instances in ERROR per
// cluster) shows as "-".
package status
