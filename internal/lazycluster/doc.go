// Package lazycluster holds a cluster.Cluster that is built and started
// only when something uses it.
//
// A provider hands every replica a cluster object for each cluster of the
// fleet, and each replica's coordinator then serves about a replica's
// share of them. controller-runtime's cluster.New and Start cost, per
// cluster, a copied config, codec factories, clients, two informer maps
// and three goroutines (about 40 KiB with their stacks) whether anything
// is served or not: at 10,000 clusters on 4 replicas, a replica paid for
// 7,500 clusters it never served. A lazy cluster costs a closure and a
// few fields until its first use: a getter that hands out its client,
// reader, mapper, scheme or recorders, or a read or an informer through
// its cache. Its config and HTTP client are known before (a health probe
// needs no more). Until then its cache reports itself synced (it holds
// nothing) and field indexes are recorded, to be added when it is built.
// Its Start waits for that first use, then runs the built cluster.
package lazycluster
