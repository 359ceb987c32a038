// Package cacheopts holds the cluster.Options that a provider gives every
// cluster it creates for the spoke runtime:
//
//   - TrimCache, a cache transform that drops what the runtime never reads
//     (managedFields' field sets, kubectl's last-applied annotation) and
//     makes cached objects share the strings and list items they repeat;
//   - ReportWatchErrors, which records, per kind, whether the cluster
//     cache's informers fail to list or watch, for the runtime to read
//     through HealthOf and show on the instances concerned.
//
// # Why a package of its own
//
// Providers (providers/secret, providers/kcp, testing's) apply these
// options to every cluster, and must not depend on the runtime or the
// compiler for that: importing them from the runtime's package dragged
// the CEL compiler and the whole runtime into every provider. This
// package depends on controller-runtime, client-go and apimachinery only
// (hack/check-deps.sh keeps it so); the runtime reads what it records. The
// public spoke and sdk packages expose TrimCache and ReportWatchErrors as
// functions of their own.
package cacheopts
