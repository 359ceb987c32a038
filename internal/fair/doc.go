// Package fair shares a graph's workers fairly among the clusters that
// serve it and, within a cluster, among the namespaces (tenants) that have
// work, so that one tenant's heavy or failing instances delay only that
// tenant:
//
//   - NewQueue's order hands requests out in turns of clusters and, within
//     a cluster, of namespaces (queue.go), and limits the retries of failed
//     requests per namespace rather than for the whole queue, and paces
//     the retries of reconciles stopped by a limit (ErrStoppedByLimit) per
//     namespace, each ten times what it took after the namespace's
//     previous one, so that together they hold a tenth of a worker
//     (retry.go);
//   - Slots decides whether one more reconcile of a namespace may start
//     within a cluster's share of the workers, parks it if not, and says
//     which parked requests fit once one ends (slots.go).
//
// It is a leaf: it imports nothing of the module, and holds no reference
// to the drivers that use it. The spoke runtime's controller of a graph
// owns one queue and one Slots per cluster, under its own lock; a hub
// graph's controller owns one queue, whose requests all name the hub.
package fair
