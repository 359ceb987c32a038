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

// Healthy reports whether the latest version of the graph is established
// and served on the cluster.
func (c ClusterStatus) Healthy() bool {
	return c.CRD.Healthy() && (!c.Serving || c.ServedGeneration == c.Generation)
}

// Explain is the one-line account of c written to the RGD: the state's
// message, prefixed with the version still served where it is not the
// latest.
func (c ClusterStatus) Explain() string {
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
// ReadyInstances) are filled by whoever runs the instances (fleetgraph's
// hub from its instance runtime) and stay zero for a FanOut alone.
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
	// Serving reports whether some version of the graph serves the cluster.
	Serving bool
	// ServedGeneration is the RGD generation of the version serving the
	// cluster, valid when Serving. Where the latest version cannot be served
	// yet (CRD says why), the previous one keeps serving and this is lower
	// than Generation.
	ServedGeneration int64
	// Instances is how many instances of the graph the cluster holds.
	Instances int
	// ReadyInstances is how many of them are ACTIVE.
	ReadyInstances int
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
	// Engaged is false when the cluster has left the fleet (or was never
	// engaged) while instances still name it: their deletion waits for it.
	Engaged bool
	// Unreachable, when set, says why the cluster stopped answering the
	// hub's probe.
	Unreachable string `json:",omitempty"`
}
