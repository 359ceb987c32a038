// Package hub puts CustomResourceDefinitions on a fleet of clusters and
// tells, per cluster, where each stands. It is the half of fleetgraph that
// a platform can use without fleetgraph's instance runtime: a platform that
// runs kro, or its own operators, inside each cluster needs the same CRDs
// everywhere, fanned out safely, and an honest account of which clusters
// serve them.
//
// # What a FanOut does
//
// A FanOut is added to a multicluster-runtime manager, which engages it
// with every cluster its provider offers. FanOut.Serve hands it a Graph (a
// CRD and what gates it) and it makes that CRD established on every
// engaged cluster, current and future, retrying with backoff:
//
//   - server-side apply, with its own field manager; a CRD of that name
//     that fleetgraph does not own is never overwritten (CRDConflict);
//   - a schema change that would break what is stored or written against
//     the served CRD is refused unless the Graph allows it
//     (CRDIncompatible), and the served CRD stays;
//   - a cluster that does not serve a kind the Graph needs (Graph.Kinds),
//     or that a Graph's own Check refuses, is CRDIncompatible;
//   - the CRD is applied, then waited for until Established;
//   - a slow or dead cluster delays only itself: every request is bounded,
//     and clusters behind one API server and identity share their checks.
//
// FanOut.Status reports each graph per cluster (Pending, Applied,
// Established, Conflict, Incompatible, Error), and the Prober turns a
// cluster that stops answering Unreachable within a bound. Clusters the
// provider could not engage are listed too, when the provider reports them
// (EngagementReporter).
//
// FanOut.Ensure is one such attempt on one cluster, for callers that drive
// the clusters themselves: fleetgraph's own hub calls it from its instance
// runtime's gate, so that instances are watched only where the CRD is
// established.
//
// A Graph's Admission, a MutatingAdmissionPolicy that stamps new
// instances, is bound with the CRD only once a dry-run probe shows the API
// server can run it (admission_activate.go). Admissions does the same for
// a CRD something else applies: fleetgraph's hub graphs stamp their
// instances on the hub with it.
//
// # Providers
//
// The interfaces a multicluster-runtime provider may implement to tell the
// hub more about its clusters are defined here, so that a provider asserts
// them without importing the rest of fleetgraph:
//
//	var _ hub.ClusterLabeler = &Provider{}
//
// ClusterLabeler gives a cluster's labels (placement and rollout waves
// select by them), ClusterLabelNotifier says when they change (so that
// graphs reading them follow at once), ClusterRegistry tells a departed
// cluster from one that is coming back, EngagementReporter names the
// clusters that could not be engaged and why, and Publisher serves graphs
// through something other than a CRD per cluster (providers/kcp publishes
// to a kcp APIExport).
//
// A platform whose own multicluster-runtime provider knows nothing of
// labels wraps it with LabelsFrom and a function that gives each
// cluster's labels from the platform's inventory; the result is a
// ClusterLabeler and a ClusterLabelNotifier, and answers the other
// questions from the wrapped provider.
//
// This package imports neither fleetgraph's compiler nor its instance
// runtime: its unit of work is a CRD, not a ResourceGraphDefinition.
package hub
