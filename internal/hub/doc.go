// Package hub holds the hub-side pieces of fleetgraph, each usable on its
// own but normally wired together by package sdk:
//
//   - FanOut puts a graph's generated CRD on one cluster with server-side
//     apply and waits until it is established. It refuses to touch a CRD it
//     does not own (Conflict), a cluster that does not serve a child kind
//     the graph needs or whose schemas of those kinds do not type-check the
//     graph as the hub's did (spoke_schemas.go), or a breaking schema
//     change without the RGD's opt-in (Incompatible). Its Ensure method is the gate the spoke runtime
//     consults per graph and cluster, so instance watches start only where
//     the CRD is established, and a slow or dead spoke delays only itself.
//   - Tracker keeps each graph's state per cluster (the latest version's CRD
//     state, the version served, reachability, and clusters the provider
//     could not engage); GraphStatus.Summary condenses it into the bounded
//     form written on the RGD.
//   - Prober asks each engaged cluster's /readyz on an interval with a
//     timeout, so a spoke that stops answering turns Unreachable within
//     Interval+Timeout and back when it answers. Providers that implement
//     EngagementReporter have the clusters they could not engage shown too.
//   - Revisions keeps an immutable, numbered GraphRevision record of every
//     accepted spec on the hub (fleetgraph.dev/v1alpha1, "<rgd>-r00001");
//     FanOut labels each spoke CRD with the revision it was applied from, so
//     a hub that restarts recompiles the revision a cluster still serves.
//   - RGDReconciler watches ResourceGraphDefinitions on the hub cluster only
//     and drives a Registry (sdk.Hub) with the ones its selector claims,
//     writing kro's conditions (GraphAccepted, KindReady, ControllerReady,
//     Ready), the topological order and the fleet summary back. Claimed RGDs
//     carry a finalizer until their graph is removed from every cluster.
//     Several RGDs are reconciled at once (Workers), so a tenant's slow
//     ones hold up only their own workers.
//   - FanOut.RemoveAdmission and HeldInstances are the per-cluster steps of
//     removing a graph; sdk.Hub orders and retries them.
//
// Metrics are registered in controller-runtime's registry, labelled with
// the cluster.
package hub
