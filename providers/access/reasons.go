package access

import (
	"errors"
	"time"
)

// Event reasons that every provider records on the object describing a
// cluster (a kubeconfig Secret, a ClusterProfile, a Cluster API Cluster),
// and that lead the cluster's entry in the hub's fleet status when it is
// not engaged (hub.EngagementReporter). A provider may add reasons of its
// own.
const (
	// ReasonEngaged: the cluster was engaged.
	ReasonEngaged = "ClusterEngaged"
	// ReasonUnsafeKubeconfig: the description would make the hub do what
	// its Safety refuses (ErrUnsafeKubeconfig).
	ReasonUnsafeKubeconfig = "UnsafeKubeconfig"
	// ReasonInvalidKubeconfig: the description cannot be used
	// (ErrInvalidKubeconfig).
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
	// ReasonMissingKubeconfig: there is no description to read
	// (ErrMissingKubeconfig).
	ReasonMissingKubeconfig = "MissingKubeconfig"
	// ReasonUnreachable: the server did not answer an authenticated
	// discovery request (Probe); retried with backoff.
	ReasonUnreachable = "ClusterUnreachable"
	// ReasonDuplicateName: another object of the same provider holds the
	// cluster's name.
	ReasonDuplicateName = "DuplicateClusterName"
	// ReasonEngageFailed: the cluster could not be created, started or
	// engaged.
	ReasonEngageFailed = "EngageFailed"
	// ReasonDuplicateServer: another cluster of the same provider holds
	// the same API server (ErrDuplicateServer).
	ReasonDuplicateServer = "DuplicateServer"
)

// ReasonFor returns the reason for an error of RESTConfig, ClientConfig or
// CheckServer.
func ReasonFor(err error) string {
	switch {
	case errors.Is(err, ErrMissingKubeconfig):
		return ReasonMissingKubeconfig
	case errors.Is(err, ErrUnsafeKubeconfig):
		return ReasonUnsafeKubeconfig
	default:
		return ReasonInvalidKubeconfig
	}
}

// Defaults every provider gives the clients of its clusters.
const (
	// DefaultQPS and DefaultBurst limit each cluster's client where its
	// configuration sets no limits.
	DefaultQPS   = 50
	DefaultBurst = 100
	// DefaultConnectTimeout bounds the check (Probe) that a server answers
	// before its cluster is engaged.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultCacheSyncTimeout bounds the wait for a new cluster's cache to
	// sync.
	DefaultCacheSyncTimeout = 30 * time.Second
)
