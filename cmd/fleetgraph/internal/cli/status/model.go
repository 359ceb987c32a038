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
	// LatestRevision is the revision of the graph's newest spec
	// (status.lastIssuedRevision).
	LatestRevision int64 `json:"latestRevision,omitempty"`
	// Summary is the hub's one line on which revisions serve the fleet
	// and why some clusters serve another (status.fleet.message).
	Summary string `json:"summary,omitempty"`
	// Counts over every cluster, from status.fleet (a hub graph's
	// instances are on the hub).
	ClusterCount   int32 `json:"clusterCount"`
	Established    int32 `json:"established"`
	Unhealthy      int32 `json:"unhealthy"`
	Instances      int64 `json:"instances"`
	ReadyInstances int64 `json:"readyInstances"`
	ErrorInstances int64 `json:"errorInstances"`
	// Revisions counts the clusters serving each revision, newest first.
	Revisions []RevisionCount `json:"revisions,omitempty"`
	// Rollout is the GraphRollout that rules the graph, if any.
	Rollout *Rollout `json:"rollout,omitempty"`
	// Clusters are the graph on each cluster, sorted by name.
	Clusters []Cluster `json:"clusters"`
	// Targets are, for a hub graph, the clusters its instances write to,
	// sorted by name ("" is the hub's own).
	Targets []Target `json:"targets,omitempty"`
	// Unlisted counts the clusters status.fleet counts that no record
	// this view could read lists.
	Unlisted int32 `json:"unlisted,omitempty"`
}

// RevisionCount is how many clusters serve one revision.
type RevisionCount struct {
	Revision int64 `json:"revision"`
	Clusters int32 `json:"clusters"`
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

// Cluster is one graph on one cluster, as the hub says: no field is
// computed here. A number the hub did not publish for the cluster is
// absent (null in Go), never a sentinel.
type Cluster struct {
	Name string `json:"name"`
	// CRD is the state of the graph's CRD there (Established, Applied,
	// Pending, Conflict, Incompatible, Error, Unreachable, NotEngaged).
	CRD string `json:"crd,omitempty"`
	// Healthy is the hub's verdict: the cluster serves the revision it
	// should, and nothing stands in the way.
	Healthy bool `json:"healthy"`
	// ServedRevision is the revision serving the cluster; absent while
	// none does, or when not published.
	ServedRevision *int64 `json:"servedRevision,omitempty"`
	// DesiredRevision is the revision the cluster should serve, as the
	// graph's rollout decides.
	DesiredRevision *int64 `json:"desiredRevision,omitempty"`
	// Instance counts.
	Instances      *int64 `json:"instances,omitempty"`
	ReadyInstances *int64 `json:"readyInstances,omitempty"`
	ErrorInstances *int64 `json:"errorInstances,omitempty"`
	// Reason says why the cluster does not serve the latest revision, or
	// the one it should (RollingOut, Held, RolledBack, Failed,
	// GateNotPassed, Incompatible, Unreachable, ReplicaGone); Why says
	// it for people.
	Reason string `json:"reason,omitempty"`
	Why    string `json:"why,omitempty"`
	// Message is the CRD state's message.
	Message string `json:"message,omitempty"`
	// Reachable is "yes", "no" or "" (unknown).
	Reachable string `json:"reachable,omitempty"`
	// Wave is the rollout wave the cluster belongs to, if any, and Held
	// reports that a hold pins it.
	Wave string `json:"wave,omitempty"`
	Held bool   `json:"held,omitempty"`
	// HandingOver reports that the hub replica that served the cluster
	// let it go and its new one has not reported it yet.
	HandingOver bool `json:"handingOver,omitempty"`
	// Since is when CRD last changed, when published.
	Since *time.Time `json:"since,omitempty"`
	// Source says where the row comes from: record (a hub's record of the
	// cluster) or fleet (status.fleet's list only).
	Source string `json:"source"`
}

// Target is one cluster a hub graph's instances write to.
type Target struct {
	// Name is the cluster; "" is the hub's own.
	Name           string `json:"name"`
	Instances      int32  `json:"instances"`
	ReadyInstances int32  `json:"readyInstances"`
	ErrorInstances int32  `json:"errorInstances"`
	// Deleting counts the instances being deleted that wait for what they
	// wrote there.
	Deleting    int32  `json:"deleting"`
	Engaged     bool   `json:"engaged"`
	Unreachable string `json:"unreachable,omitempty"`
}
