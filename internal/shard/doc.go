// Package shard runs hub replicas on multicluster-runtime's sharded
// coordinator (pkg/manager/coordinator/sharded): rendezvous hashing over
// peer Leases decides which replica should serve a cluster, and a Lease per
// cluster fences it so that only one does at a time.
//
// It exists for one reason: the coordinator's default peer registry, at
// v0.24.1, hard-codes a 30 second peer Lease renewed every 10 seconds and
// leaves the Lease behind when the replica stops. A replica that dies is
// then still hashed over for up to 40 seconds, whatever the fence timings,
// and one that stops cleanly hands nothing over before that either.
// PeerRegistry is the same Lease-based registry (same names and labels, so
// replicas running either agree on membership) with the timings as options,
// and it expires its own Lease as it stops.
package shard
