// Package v1alpha1 holds fleetgraph's own hub-side API, group
// fleetgraph.dev: GraphRevision, the immutable, numbered record of one
// accepted ResourceGraphDefinition spec, and GraphRollout, the opt-in policy
// that places a graph on clusters by label and rolls its revisions out in
// waves. The RGD itself stays as kro defines it: a platform that wants
// neither creates no GraphRollout.
//
// The shape follows kro's GraphRevision (internal.kro.run/v1alpha1): a
// cluster-scoped object named "<rgd>-r00001" holding the revision number and
// a snapshot of the RGD's name, generation and spec. It lives in fleetgraph's
// group so that fleetgraph and kro can share a hub without fighting over
// the kind. A hub that restarts reads the records back to find, and
// recompile, the revision each cluster was serving; rollouts build on the
// revision numbers.
//
// The CRDs are built in Go (GraphRevisionCRD, GraphRolloutCRD), not by
// controller-gen; the hub installs them.
//
// +kubebuilder:skip
package v1alpha1
