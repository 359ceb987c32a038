// Package clustervalues is the hub's account of the platform's
// ClusterValues objects (fleetgraph.dev/v1alpha1): which values each graph
// reads under cluster.values on each cluster, and the controller that
// keeps that account current and tells the spoke runtime when it changed.
//
// Values come only from these hub-side objects, which the platform writes
// (they are cluster-scoped, out of a tenant's namespaced reach), never
// from an instance. The merge rule is the API's (see
// fgv1alpha1.ClusterValues): objects for every graph first, then the
// graph's own, each in name order, a later object's top-level key winning;
// a disagreement between two objects of the same rank is a conflict,
// reported on the object that loses.
//
// The controller watches the objects with an informer of its own (it
// installs their CRD first, so the watch can start) and, on every change,
// rebuilds the Store and calls Notify: the runtime then asks each graph
// that reads values for them again on every cluster, and only graphs
// whose values did change there reconcile their instances again.
package clustervalues
