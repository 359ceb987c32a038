package status

import (
	"time"
)

// Fleet is the view of every graph read.
type Fleet struct {
	// Graphs are sorted by name.
	Graphs []Graph `json:"graphs"`
	// Clusters are every cluster any graph lists, sorted.
	Clusters []string `json:"clusters"`
}

// Graph is one graph across the fleet.
type Graph struct {
	Name string `json:"name"`
	// Kind is the instance kind, "group/version Kind".
	Kind string `json:"kind"`
	// Ready is the RGD's Ready condition status ("" when absent), and
	// Reason and Message explain it when it is not True.
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// LatestRevision is status.lastIssuedRevision.
	LatestRevision int64 `json:"latestRevision,omitempty"`
	// Total counts, from status.fleet.
	ClusterCount   int32 `json:"clusterCount"`
	Established    int32 `json:"established"`
	Unhealthy      int32 `json:"unhealthy"`
	Instances      int64 `json:"instances"`
	ReadyInstances int64 `json:"readyInstances"`
	// Rollout is the GraphRollout that rules the graph, if any.
	Rollout *Rollout `json:"rollout,omitempty"`
	// Clusters are the clusters some source names, sorted.
	Clusters []Cluster `json:"clusters"`
	// Unlisted counts the clusters status.fleet counts that no source
	// names: healthy ones, when the hub keeps no per-cluster record.
	Unlisted int32 `json:"unlisted,omitempty"`
}

// Rollout is the part of a GraphRollout the view shows.
type Rollout struct {
	Name       string `json:"name"`
	Phase      string `json:"phase"`
	Target     int64  `json:"targetRevision"`
	Stable     int64  `json:"stableRevision"`
	Wave       int32  `json:"wave"`
	WaveName   string `json:"waveName,omitempty"`
	Paused     bool   `json:"paused,omitempty"`
	RollbackTo int64  `json:"rollbackTo,omitempty"`
	Message    string `json:"message,omitempty"`
}

// Unknown marks a number no source publishes.
const Unknown = -1

// Cluster is one graph on one cluster.
type Cluster struct {
	Name string `json:"name"`
	// CRD is the state of the graph's CRD there (Established, Applied,
	// Pending, Conflict, Incompatible, Error, Unreachable, NotEngaged).
	CRD string `json:"crd"`
	// Message says what is wrong, if anything.
	Message string `json:"message,omitempty"`
	// Served is the revision serving the cluster (0: none), Desired the
	// one it should serve; Unknown when not published.
	Served  int64 `json:"servedRevision"`
	Desired int64 `json:"desiredRevision"`
	// Instance counts; Unknown when not published.
	Instances      int64 `json:"instances"`
	ReadyInstances int64 `json:"readyInstances"`
	ErrorInstances int64 `json:"errorInstances"`
	// Reachable is "yes", "no" or "" (unknown).
	Reachable string `json:"reachable,omitempty"`
	// Wave is the rollout wave the cluster belongs to, if any.
	Wave string `json:"wave,omitempty"`
	// Since is when CRD last changed, when published.
	Since *time.Time `json:"since,omitempty"`
	// Source says where the row comes from: record, rollout, fleet
	// (status.fleet's unhealthy list) or inferred.
	Source string `json:"source"`
}

// Healthy reports whether the cluster serves the revision it should with
// its CRD established.
func (c Cluster) Healthy() bool {
	return c.CRD == "Established" && (c.Served == Unknown || c.Desired == Unknown || c.Served == c.Desired)
}
