// Package spoke runs a compiled graph for the instances that live in one
// cluster: dynamic watches, reconcile in DAG order, apply, prune, delete and
// instance status. The same code serves single-cluster mode and every spoke a
// provider engages.
//
// Not built yet.
package spoke
