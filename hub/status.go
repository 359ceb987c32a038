package hub

import (
	"fmt"
	"time"
)

// CRDState is where a graph's generated CRD stands on one cluster.
type CRDState string

const (
	// CRDPending: fan-out to the cluster has not finished a first attempt.
	CRDPending CRDState = "Pending"
	// CRDApplied: the CRD was applied and is not established yet.
	CRDApplied CRDState = "Applied"
	// CRDEstablished: the CRD is established and instances are served.
	CRDEstablished CRDState = "Established"
	// CRDConflict: a CRD of that name exists and fleetgraph does not own it;
	// it is left untouched.
	CRDConflict CRDState = "Conflict"
	// CRDIncompatible: the cluster does not serve a kind the graph needs, or
	// the new schema would break the one served there.
	CRDIncompatible CRDState = "Incompatible"
	// CRDError: any other failure; retried with backoff.
	CRDError CRDState = "Error"
	// CRDMissing: the CRD the fan-out established there was deleted, or is
	// being deleted, by something else (or lost with the server's
	// storage); it is applied again as soon as it is gone. The instances
	// there went or are going with it.
	CRDMissing CRDState = "Missing"
	// CRDUnreachable: the cluster's API server stopped answering the hub's
	// probe; the last known state is kept and shown again once it answers.
	CRDUnreachable CRDState = "Unreachable"
	// CRDNotEngaged: the provider could not engage the cluster (its
	// kubeconfig is unsafe or malformed, the server is unreachable or is
	// already engaged under another name); Message says why.
	CRDNotEngaged CRDState = "NotEngaged"
)

// Healthy reports whether the state needs no attention.
func (s CRDState) Healthy() bool { return s == CRDEstablished }

// Reason says why a cluster does not serve the revision it should, or why
// the revision it should serve is not the graph's latest. The hub that
// runs the instances (fleetgraph's) fills it in; a FanOut alone leaves it
// empty.
type Reason string

// The reasons, from what only time fixes to what needs attention.
const (
	// ReasonRollingOut: the graph's rollout has not taken the latest
	// revision to the cluster yet (its wave has not started, waits for
	// approval or for its turn), or is moving it there.
	ReasonRollingOut Reason = "RollingOut"
	// ReasonHeld: a hold of the graph's rollout pins the cluster at the
	// revision it serves.
	ReasonHeld Reason = "Held"
	// ReasonRolledBack: the latest revision was rolled back (by the
	// rollout's onFailure, or spec.rollbackTo); the cluster serves the
	// revision rolled back to.
	ReasonRolledBack Reason = "RolledBack"
	// ReasonFailed: the cluster failed its wave of the latest revision,
	// within the wave's failure budget, and went back to the stable one.
	ReasonFailed Reason = "Failed"
	// ReasonGate: the revision the cluster should serve has not passed
	// its gate there yet (its CRD is not applied or not established, or
	// was refused for a reason that may pass: CRD says which).
	ReasonGate Reason = "GateNotPassed"
	// ReasonIncompatible: the cluster cannot take the revision it should
	// serve: a kind the graph needs is missing, the new schema would break
	// the served one, or a CRD of that name is not fleetgraph's.
	ReasonIncompatible Reason = "Incompatible"
	// ReasonUnreachable: the cluster does not answer the hub's probe, or
	// the provider could not engage it.
	ReasonUnreachable Reason = "Unreachable"
	// ReasonReplicaGone: with hub replicas, the replica that served the
	// cluster stopped, and no other has taken it over yet: the other
	// fields are the last state that replica reported.
	ReasonReplicaGone Reason = "ReplicaGone"
)

// Problem reports whether the reason needs attention, as opposed to a
// decision (held, rolled back, failed within its budget) or a rollout
// under way.
func (r Reason) Problem() bool {
	switch r {
	case ReasonGate, ReasonIncompatible, ReasonUnreachable, ReasonReplicaGone:
		return true
	}
	return false
}

// Healthy reports whether the cluster serves what it should with nothing
// wrong. Where the hub decided which revision the cluster should serve
// (DesiredRevision set), that is: it serves that revision, and no
// problem stands in the way (Reason); a CRD state about another revision
// (one it failed or was rolled back from) does not count. Otherwise (a
// FanOut alone): the latest version's CRD is established and, if some
// version serves the cluster, it is the latest.
func (c ClusterStatus) Healthy() bool {
	if c.DesiredRevision == 0 {
		return c.CRD.Healthy() && (!c.Serving || c.ServedGeneration == c.Generation)
	}
	if c.Reason.Problem() || !c.Serving || c.ServedRevision != c.DesiredRevision {
		return false
	}
	return c.CRD.Healthy() || c.Revision != c.DesiredRevision
}

// Explain is the one-line account of c written to the RGD: why, when the
// hub filled Reason in; else the state's message, prefixed with the
// version still served where it is not the latest.
func (c ClusterStatus) Explain() string {
	if c.Why != "" {
		return c.Why
	}
	if !c.Serving || c.ServedGeneration == c.Generation {
		return c.Message
	}
	msg := fmt.Sprintf("serving generation %d; generation %d not served yet", c.ServedGeneration, c.Generation)
	if c.Message != "" {
		msg += ": " + c.Message
	}
	return msg
}

// ClusterStatus is a graph's state on one cluster. A FanOut fills in the
// CRD's state; the instance fields (Serving, ServedGeneration, Instances,
// ReadyInstances) and the revisions the hub decides (DesiredRevision,
// Reason) are filled by whoever runs the instances (fleetgraph's hub from
// its instance runtime and rollouts) and stay zero for a FanOut alone.
type ClusterStatus struct {
	// Cluster is the provider's name for the cluster ("" in single-cluster
	// mode).
	Cluster string
	// CRD is the state of the generated CRD of the latest version there.
	CRD CRDState
	// Message explains a state other than Established.
	Message string
	// Generation is the RGD generation of the latest version of the graph,
	// the one CRD and Message are about.
	Generation int64
	// Revision is the revision (GraphRevision number, Graph.Revision) of
	// the version CRD and Message are about; 0 when it has none.
	Revision int64 `json:",omitempty"`
	// Serving reports whether some version of the graph serves the cluster.
	Serving bool
	// ServedGeneration is the RGD generation of the version serving the
	// cluster, valid when Serving. Where the latest version cannot be served
	// yet (CRD says why), the previous one keeps serving and this is lower
	// than Generation.
	ServedGeneration int64
	// ServedRevision is the revision of the version serving the cluster,
	// valid when Serving (0: a version without a number).
	ServedRevision int64 `json:",omitempty"`
	// DesiredRevision is the revision the cluster should serve now, as the
	// graph's placement and rollout decide; 0 when no one decided (a
	// FanOut alone).
	DesiredRevision int64 `json:",omitempty"`
	// Reason says why the cluster does not serve DesiredRevision, or why
	// DesiredRevision is not the graph's latest revision; "" when it
	// serves the latest. Why says it for people.
	Reason Reason `json:",omitempty"`
	Why    string `json:",omitempty"`
	// Instances is how many instances of the graph the cluster holds.
	Instances int
	// ReadyInstances is how many of them are ACTIVE.
	ReadyInstances int
	// ErrorInstances is how many of them are in ERROR.
	ErrorInstances int `json:",omitempty"`
	// Uncounted reports that the instances there have not been counted
	// yet (no version serves the cluster, its instance watch has not
	// listed them, or its CRD is Missing): the counts say nothing, and are
	// zero.
	Uncounted bool `json:",omitempty"`
	// Since is when CRD last changed.
	Since time.Time
	// HandingOver reports that the hub replica that served the cluster let
	// it go to another replica, which has not reported it yet: the other
	// fields are the last state the first one saw. Always false for a lone
	// hub.
	HandingOver bool `json:",omitempty"`
}

// GraphStatus is a graph's state across the fleet, one entry per engaged
// cluster, sorted by cluster name.
type GraphStatus struct {
	// Graph is the graph's name.
	Graph string
	// LatestRevision is the revision of the graph's newest spec (0: it
	// has no number yet, or no one numbers it: a FanOut alone).
	LatestRevision int64 `json:",omitempty"`
	// Instances, ReadyInstances and ErrorInstances count a hub graph's
	// instances, which live on the hub (Targets says where they write);
	// zero for other graphs, whose instances each cluster counts.
	Instances      int `json:",omitempty"`
	ReadyInstances int `json:",omitempty"`
	ErrorInstances int `json:",omitempty"`
	// Clusters is the graph on each cluster, sorted by cluster name.
	Clusters []ClusterStatus
	// AwaitingReplicas names, when hub replicas share the fleet, the
	// replicas that serve other graphs but have not reported their
	// clusters for this one yet: those clusters are missing from Clusters
	// until they do. Empty for a lone hub.
	AwaitingReplicas []string
	// Targets is, for a hub graph (one whose resources name a target
	// cluster; its CRD and instances live on the hub), each cluster its
	// instances may write to, the hub's own as "", sorted by name. Empty
	// for other graphs.
	Targets []TargetStatus `json:",omitempty"`
}

// TargetStatus is one cluster a hub graph's instances write to.
type TargetStatus struct {
	// Cluster is the provider's name for the cluster; "" is the hub's own.
	Cluster string
	// Instances is how many of the graph's instances may have children
	// there: those whose targets named it at some point and that have not
	// finished deleting what they wrote there.
	Instances int
	// ReadyInstances is how many of them are ACTIVE.
	ReadyInstances int
	// ErrorInstances is how many of them are in ERROR.
	ErrorInstances int `json:",omitempty"`
	// Deleting is how many of them are being deleted and still wait for
	// what they wrote there to go.
	Deleting int `json:",omitempty"`
	// Engaged is false when the cluster has left the fleet (or was never
	// engaged) while instances still name it: their deletion waits for it.
	Engaged bool
	// Unreachable, when set, says why the cluster stopped answering the
	// hub's probe.
	Unreachable string `json:",omitempty"`
}
