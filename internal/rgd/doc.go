// Package rgd is the hub's ResourceGraphDefinition controller: it claims
// each RGD on the hub cluster with a finalizer, hands it to a Registry
// (sdk.Hub compiles, records and serves it), writes what came of it to the
// RGD's status (its conditions, resources in topological order and a
// bounded summary of the fleet, Summary), and on deletion waits until the
// Registry has removed the graph from every cluster. Several RGDs are
// reconciled at once (Reconciler.Workers), so a tenant's slow ones (a
// compile waited for, a megabyte spec) hold up only their own workers.
//
// It is a package of its own so that the controller's contract with the
// façade is one small interface (Registry) and the façade's registration
// code is not mixed with the RGD's status and events.
package rgd
