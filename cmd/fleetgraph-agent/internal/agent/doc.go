// Package agent is fleetgraph's pull-mode agent: it runs inside one spoke
// cluster, holds a credential for the hub only (and in-cluster
// credentials for its own cluster), and serves on its own cluster what
// the hub assigns to it, without the hub ever connecting to the cluster.
// The hub's side is described in the sdk's pull mode (PullOptions) and
// the guide docs/guides/pull-mode.md.
//
// # What it does
//
//   - It reads its cluster's GraphAssignments from its namespace on the
//     hub (fleetgraph-pull-<cluster>), through a watch.
//   - It keeps each assignment, before acting on it, in a ConfigMap of
//     its own in its own cluster (StateNamespace), with the version it
//     serves: after a restart it serves them again without the hub.
//   - It compiles each assignment's RGD snapshot (sdk/graph) against its
//     own cluster's schemas and serves it with the public spoke runtime
//     (spoke.Runtime) on its own cluster, as revision Revision, with the
//     assignment's cluster name, labels and values.
//   - The runtime's gate puts the graph's CRD on the cluster with the
//     public fan-out (hub.FanOut.Ensure on its own cluster): the same
//     ownership, conflict and breaking-change rules as a pushed cluster,
//     and the same states. A revision whose CRD cannot be applied leaves
//     the previous one serving, as on a pushed cluster.
//   - It writes, per graph, a GraphReport: the assignment acted on, the
//     CRD's state, the revision serving, the instance counts, the health
//     condition's answer and the removal's progress; only when one of
//     them changed. It renews its heartbeat Lease every RenewInterval.
//   - It rotates its hub token (a TokenRequest for its own
//     ServiceAccount) at 80% of the token's life, and keeps the new one
//     in its Secret.
//   - A removal assignment is served with the spoke runtime's removal
//     modes; DeleteCRD deletes the CRD once no instance is left and only
//     if fleetgraph owns it. An assignment deleted on the hub (the hub
//     read as whole, not an outage) stops the graph and forgets it.
//
// # Autonomy
//
// While the hub does not answer, the spoke runtime goes on: instances are
// created, updated, repaired and deleted as usual, under the last
// assignments; reports and heartbeats fail and are retried every
// ReportInterval, so that within one interval of the hub's return the hub
// shows the truth again. The agent never changes what it serves because
// the hub is away: only a new assignment does.
//
// # What it imports
//
// Public packages only: spoke (the instance runtime), hub (the fan-out's
// CRD rules), sdk/graph (the compiler) and sdk/apis. It needs no hub
// process and reaches nothing but the hub's API server and its own.
package agent
