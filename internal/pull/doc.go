// Package pull is the hub's side of pull mode: clusters the hub serves
// without ever connecting to them, through an agent inside each
// (cmd/fleetgraph-agent) that holds a credential for the hub only.
//
// # Why
//
// A pushed cluster is dialled by the hub: the hub holds a credential for
// its API server and a network path to it. A cluster behind NAT or a
// firewall, at the edge, in a customer's account, or under a rule that no
// central process may hold credentials to every cluster, cannot offer
// that. Its agent dials the hub instead, as Open Cluster Management's
// klusterlet does. What the hub decides for such a cluster is the same as
// for a pushed one (placement, rollout waves, approvals, holds, cluster
// values); only the way the decision travels, and the way the cluster's
// state comes back, differ.
//
// # The objects on the hub (group fleetgraph.dev, see sdk/apis)
//
//   - PullCluster (cluster-scoped), written by the platform. Creating it
//     is the approval of the cluster; its labels are the cluster's labels.
//   - For each PullCluster the hub makes a namespace
//     "fleetgraph-pull-<cluster>", and in it the agent's ServiceAccount
//     "fleetgraph-agent" and a RoleBinding of that ServiceAccount to the
//     ClusterRole "fleetgraph-pull-agent". The binding is namespaced, so
//     the agent's rights stop at its own namespace.
//   - One GraphAssignment per graph the cluster should serve, named after
//     the graph, written by the hub only: the revision and the RGD
//     snapshot to serve, cluster.name and cluster.labels, the graph's
//     ClusterValues there, the rollout's health condition, and, while the
//     graph leaves the cluster, how (Finalize or Release) and whether to
//     delete its CRD.
//   - One GraphReport per graph, named after the graph, written by the
//     agent only: the assignment it acts on (generation, revision), the
//     CRD's state there, the revision serving the cluster, instance counts
//     (total, ready, confirmed, in ERROR), the health condition's answer
//     and, during a removal, how many instances still hold the finalizer.
//   - A Lease "fleetgraph-agent", renewed by the agent: its heartbeat.
//
// # Identity and registration
//
// The agent's identity on the hub is its cluster's ServiceAccount, and
// its credential a bound ServiceAccount token (TokenRequest). Joining:
// the platform creates the PullCluster (its approval), the hub makes the
// namespace, ServiceAccount and RoleBinding, and the platform hands the
// agent a short-lived bootstrap token of that ServiceAccount (kubectl
// create token, an hour say) in a kubeconfig Secret on the spoke. The
// agent exchanges it at once for a token of its own (a TokenRequest for
// itself, which its role allows and nothing else does), and rotates that
// token at 80% of its life, writing each new one into its Secret, so that
// no long-lived credential exists anywhere. Revoking: deleting the
// ServiceAccount (the hub does, when the PullCluster goes) invalidates
// every token of it at once. A leaked token reaches one namespace.
//
// The ClusterRole grants, and the RoleBinding confines to the cluster's
// namespace: get, list and watch GraphAssignments; get, list, watch,
// create, update and patch GraphReports; get, create, update and patch
// Leases; create serviceaccounts/token for the agent's own
// ServiceAccount. An agent can therefore neither read another cluster's
// assignments nor write its reports or heartbeat: the API server's RBAC
// refuses it (tested with real RBAC).
//
// # What the hub does for a pull cluster
//
// A Source watches the PullClusters, the GraphReports, the agents'
// Leases and its own GraphAssignments (label-selected, every namespace),
// and keeps an in-memory view of each pull cluster. Every Resync, and at
// once when something it depends on changes (a graph registered, a
// rollout moved, a report or a relabel arrived), it asks the hub (Fleet)
// what each cluster should serve and writes the difference: an
// assignment is written only when what it says changes, so a cluster at
// rest costs the hub's API server nothing but its heartbeat.
//
// The hub decides for a pull cluster exactly as for a pushed one (its
// spoke runtime's gate and fallback): the revision the hub offers every
// cluster reaches the cluster when the graph's placement and rollout
// allow it there; until then the cluster keeps the revision it was
// assigned before; a cluster that failed its wave, was rolled back or is
// held goes back to the revision its rollout names. The CRD gate that
// the fan-out passes for a pushed cluster is passed by the agent on its
// own cluster, and the cluster switches revisions once it has: the report
// says which revision serves, and the hub judges the cluster on that.
//
// Pull clusters appear in the fleet like pushed ones: in placement and
// rollout waves (by their labels), in FleetStatus, the RGD's status,
// `fleetgraph status`, the metrics and the rollouts' health gates, each
// built from the cluster's own report. A cluster whose agent has not
// renewed its Lease within its heartbeat grace shows Unreachable, with its
// last report kept, as a pushed cluster that stops answering the prober
// does. The hub measures the grace by its own clock from the moment it
// saw a renewal, never by the agent's clock, and only while it can read
// the Leases itself: a hub cut off from its own API server judges no
// agent, and gives every agent a full grace after it is back.
//
// # Autonomy
//
// The agent keeps the assignments it acts on in its own cluster, so that
// it serves them while the hub is down, slow or partitioned away, across
// its own restarts too. Nothing moves on a pull cluster until the hub
// decides again: the hub never changes an assignment because it lost
// sight of the agent, and the agent never changes what it serves because
// it lost sight of the hub. On reconnect the agent writes its reports
// again (its instances were created, updated, repaired and deleted
// meanwhile) and the rollout resumes from the assignments, which did not
// change.
//
// # Removal
//
// A graph unregistered from the hub is removed from pull clusters as from
// pushed ones: the assignment says Finalize (or Release, with the orphan
// option) and DeleteCRD as configured; the hub's removal waits until every
// pull cluster reports the assignment acted on, no instance holding the
// finalizer and, if asked, the CRD gone; then the assignment is deleted
// and the agent forgets the graph. A cluster no longer placed to serve a
// graph gets Release, and loses the assignment once its instances are
// released (CRD, instances and children stay), as a pushed one does. A
// deleted PullCluster has every assignment turned to Release, as a pushed
// cluster that leaves the fleet is cleaned up after; once the agent
// reports the instances released (or is unreachable, or
// DepartureTimeout has passed, when the finalizers stay), the hub deletes
// the cluster's objects and namespace, which revokes the agent.
//
// # Hub graphs
//
// A hub graph's resource may not target a pull cluster: the hub cannot
// write there. The instance goes to ERROR with a refusal naming the
// resource and the cluster and saying it is a pull cluster.
//
// # Replicas
//
// The Source writes from one replica (it needs leader election when hub
// replicas share the hub cluster); every replica reads the reports.
package pull
