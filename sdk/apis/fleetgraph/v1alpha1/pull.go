package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pull mode: the hub serves a cluster it cannot reach through an agent
// that runs inside that cluster and holds a credential for the hub only.
// The platform writes a PullCluster; the hub gives the cluster a
// namespace of its own on the hub (PullNamespace), where it publishes one
// GraphAssignment per graph the cluster should serve and where the
// cluster's agent, and only it, writes one GraphReport per graph and a
// heartbeat Lease (PullAgentName). See the guide docs/guides/pull-mode.md.

// The kinds of pull mode, and their CRDs' names.
const (
	PullClusterKind        = "PullCluster"
	PullClusterCRDName     = "pullclusters.fleetgraph.dev"
	GraphAssignmentKind    = "GraphAssignment"
	GraphAssignmentCRDName = "graphassignments.fleetgraph.dev"
	GraphReportKind        = "GraphReport"
	GraphReportCRDName     = "graphreports.fleetgraph.dev"
)

// MaxPullClusterNameLength bounds a PullCluster's name, so that its
// namespace's name is a DNS label.
const MaxPullClusterNameLength = 63 - len(PullNamespacePrefix)

// PullNamespacePrefix prefixes the name of a pull cluster's namespace on
// the hub: PullCluster "edge-1" has "fleetgraph-pull-edge-1".
const PullNamespacePrefix = "fleetgraph-pull-"

// PullNamespace is the namespace on the hub of the named pull cluster.
func PullNamespace(cluster string) string { return PullNamespacePrefix + cluster }

// PullAgentName names, in a pull cluster's namespace on the hub, the
// agent's ServiceAccount (its identity on the hub), the RoleBinding that
// grants it PullAgentClusterRole there, and its heartbeat Lease.
const PullAgentName = "fleetgraph-agent"

// PullAgentClusterRole is the ClusterRole every agent is granted in its
// own cluster's namespace only (by a RoleBinding): read its
// GraphAssignments, write its GraphReports and its Lease, and request
// tokens for its own ServiceAccount (rotation). The hub installs it.
const PullAgentClusterRole = "fleetgraph-pull-agent"

// LabelPullCluster, on the objects the hub makes for a pull cluster (its
// namespace, ServiceAccount, RoleBinding) and on its GraphAssignments,
// names the cluster.
const LabelPullCluster = "fleetgraph.dev/pull-cluster"

// FinalizerPullCluster holds a PullCluster being deleted until the hub
// has taken its graphs off the cluster (see PullCluster) and removed its
// namespace, which revokes the agent's identity.
const FinalizerPullCluster = "fleetgraph.dev/pull-cluster"

// The conditions of a PullCluster.
const (
	// PullClusterRegistered is True once the cluster's namespace, the
	// agent's ServiceAccount and its RoleBinding exist on the hub.
	PullClusterRegistered = "Registered"
	// PullClusterAgentAvailable is True while the hub sees the agent's
	// heartbeat Lease renewed within its heartbeat grace, False once it
	// has not for longer, Unknown before the first renewal.
	PullClusterAgentAvailable = "AgentAvailable"
)

// The removal modes of a GraphAssignment (GraphAssignmentSpec.Removal),
// as the spoke runtime's RemovalMode.
const (
	// RemovalFinalize: the graph is being removed; the agent serves
	// deletions only (an instance being deleted has its children deleted,
	// then its finalizer released).
	RemovalFinalize = "Finalize"
	// RemovalRelease: the graph leaves the cluster (the cluster left the
	// fleet or the graph's placement, or the graph is removed with the
	// orphan option): the agent takes fleetgraph's finalizer off every
	// instance and leaves instances and children in place.
	RemovalRelease = "Release"
)

// MaxReportMessageLength bounds every message of a GraphReport.
const MaxReportMessageLength = 2048

// PullCluster is a cluster the hub serves through an agent inside it,
// without ever connecting to it. The platform creates it (this is the
// approval of the cluster); its labels are the cluster's labels, which
// placement, rollout waves, holds and ClusterValues select by and graphs
// read as cluster.labels.
//
// The hub then makes the cluster's namespace (PullNamespace), the
// agent's ServiceAccount there and a RoleBinding to PullAgentClusterRole,
// and publishes the cluster's GraphAssignments in it. Deleting the
// PullCluster takes every graph off the cluster as a pushed cluster that
// leaves the fleet is cleaned up after: instances released (fleetgraph's
// finalizer taken off; children and CRDs stay), then the namespace goes
// and with it the agent's identity.
//
// +kubebuilder:object:root=true
type PullCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PullClusterSpec   `json:"spec,omitempty"`
	Status            PullClusterStatus `json:"status,omitempty"`
}

// PullClusterList is a list of PullClusters.
//
// +kubebuilder:object:root=true
type PullClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PullCluster `json:"items"`
}

// PullClusterSpec is what the platform says about a pull cluster beyond
// its labels.
type PullClusterSpec struct {
	// HeartbeatGraceSeconds, when set, replaces the hub's heartbeat grace
	// for this cluster: how long the hub waits for a renewal of the
	// agent's Lease before it shows the cluster Unreachable (a cluster on
	// a slow or intermittent link may need longer). Defaults to 0: the
	// hub's (sdk.PullOptions.HeartbeatGrace).
	HeartbeatGraceSeconds int32 `json:"heartbeatGraceSeconds,omitempty"`
}

// PullClusterStatus is what the hub made for the cluster and how its
// agent is doing.
type PullClusterStatus struct {
	// Namespace is the cluster's namespace on the hub.
	Namespace string `json:"namespace,omitempty"`
	// ServiceAccount is the agent's identity on the hub, as
	// "system:serviceaccount:<namespace>:<name>".
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// LastHeartbeat is when the hub last saw the agent renew its Lease, by
	// the hub's clock.
	LastHeartbeat *metav1.Time `json:"lastHeartbeat,omitempty"`
	// Graphs is how many GraphAssignments the cluster has.
	Graphs int32 `json:"graphs,omitempty"`
	// Conditions are Registered and AgentAvailable.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GraphAssignment is what one pull cluster should serve of one graph:
// named after the graph, in the cluster's namespace on the hub. Only the
// hub writes it; only the cluster's agent (and the platform) may read it.
// The agent serves Spec.Snapshot as revision Spec.Revision, and keeps
// serving the last assignment it read while the hub is away.
//
// +kubebuilder:object:root=true
type GraphAssignment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GraphAssignmentSpec `json:"spec"`
}

// GraphAssignmentList is a list of GraphAssignments.
//
// +kubebuilder:object:root=true
type GraphAssignmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GraphAssignment `json:"items"`
}

// GraphAssignmentSpec is one graph as one pull cluster should serve it.
type GraphAssignmentSpec struct {
	// Revision is the GraphRevision number of Snapshot (0: a spec the hub
	// could not number).
	Revision int64 `json:"revision"`
	// Snapshot is the RGD of that revision: the agent compiles it.
	Snapshot ResourceGraphDefinitionSnapshot `json:"snapshot"`
	// Cluster is the cluster as the graph's expressions read it
	// (cluster.name, cluster.labels).
	Cluster AssignedCluster `json:"cluster"`
	// Values are the graph's ClusterValues on the cluster (cluster.values);
	// none when empty.
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
	// Removal, when set, says the graph is leaving the cluster and how its
	// instances are served meanwhile: RemovalFinalize or RemovalRelease.
	Removal string `json:"removal,omitempty"`
	// DeleteCRD, with Removal, asks the agent to delete the graph's CRD
	// once no instance of it is left (and the CRD is fleetgraph's).
	DeleteCRD bool `json:"deleteCRD,omitempty"`
	// HealthCondition is the graph's rollout health condition
	// (GraphRollout spec.health.instanceCondition), which the agent asks
	// of the instances and reports (GraphReportStatus.Health); none when
	// empty.
	HealthCondition string `json:"healthCondition,omitempty"`
}

// AssignedCluster is a pull cluster as graphs read it.
type AssignedCluster struct {
	// Name is cluster.name: the PullCluster's name.
	Name string `json:"name"`
	// Labels is cluster.labels: the PullCluster's labels.
	Labels map[string]string `json:"labels,omitempty"`
}

// GraphReport is what one pull cluster's agent reports of one graph:
// named after the graph, in the cluster's namespace on the hub. Only the
// agent writes it. The hub judges the cluster on it (FleetStatus, the
// RGD's status, rollout health gates, metrics) as it judges a pushed
// cluster on what it sees there itself.
//
// +kubebuilder:object:root=true
type GraphReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            GraphReportStatus `json:"status,omitempty"`
}

// GraphReportList is a list of GraphReports.
//
// +kubebuilder:object:root=true
type GraphReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GraphReport `json:"items"`
}

// GraphReportStatus is one graph on one pull cluster, as its agent sees
// it.
type GraphReportStatus struct {
	// ObservedGeneration is the generation of the GraphAssignment the
	// agent acts on.
	ObservedGeneration int64 `json:"observedGeneration"`
	// AssignedRevision is that assignment's revision.
	AssignedRevision int64 `json:"assignedRevision"`
	// CRD is where the assigned revision's CRD stands on the cluster.
	CRD ReportedCRD `json:"crd"`
	// Served is the revision serving the cluster; nil while none does.
	// Where the assigned revision cannot be served yet (CRD says why), the
	// one served before keeps serving.
	Served *ReportedRevision `json:"served,omitempty"`
	// Instances counts the graph's instances on the cluster.
	Instances ReportedInstances `json:"instances"`
	// Removal, while the assignment has Removal set, is how far the
	// graph's removal from the cluster is.
	Removal *ReportedRemoval `json:"removal,omitempty"`
	// Health is the assignment's health condition, asked of the
	// instances, when it has one.
	Health *ReportedHealth `json:"health,omitempty"`
	// Time is when the agent wrote this, by its clock.
	Time metav1.Time `json:"time"`
}

// ReportedCRD is a graph's CRD on a pull cluster: a hub.CRDState with its
// message.
type ReportedCRD struct {
	// State is Pending, Applied, Established, Conflict, Incompatible or
	// Error, as the fan-out's hub.CRDState.
	State string `json:"state"`
	// Message explains a state other than Established.
	Message string `json:"message,omitempty"`
	// Revision and Generation are those of the version State is about.
	Revision   int64 `json:"revision,omitempty"`
	Generation int64 `json:"generation,omitempty"`
	// Since is when State last changed.
	Since *metav1.Time `json:"since,omitempty"`
}

// ReportedRevision is a version of a graph serving a pull cluster.
type ReportedRevision struct {
	// Revision is its GraphRevision number (0: unnumbered).
	Revision int64 `json:"revision"`
	// Generation is the generation of the RGD it was compiled from.
	Generation int64 `json:"generation"`
}

// ReportedInstances counts a graph's instances on a pull cluster, as the
// spoke runtime's Counts.
type ReportedInstances struct {
	// Counted is false until the instances were listed once: the counts
	// are zero and say nothing then.
	Counted bool `json:"counted,omitempty"`
	// Total, Ready (status.state ACTIVE), Confirmed (reconciled ACTIVE by
	// the version serving the cluster) and Errors (reconciled to ERROR by
	// it).
	Total     int32 `json:"total"`
	Ready     int32 `json:"ready"`
	Confirmed int32 `json:"confirmed"`
	Errors    int32 `json:"errors"`
}

// ReportedRemoval is how far a graph's removal from a pull cluster is.
type ReportedRemoval struct {
	// Done reports that the agent finished what the assignment's removal
	// asks: no instance holds fleetgraph's finalizer and, with DeleteCRD,
	// the CRD is deleted, or kept because instances are left (deleting it
	// would delete them).
	Done bool `json:"done,omitempty"`
	// Held is how many instances still carry fleetgraph's finalizer.
	Held int32 `json:"held"`
	// CRDDeleted reports that the CRD was deleted (DeleteCRD) or is absent.
	CRDDeleted bool `json:"crdDeleted,omitempty"`
	// Message says what the removal waits for, what it kept, or why a
	// step failed.
	Message string `json:"message,omitempty"`
}

// ReportedHealth is a rollout's health condition asked of a graph's
// instances on a pull cluster.
type ReportedHealth struct {
	// Condition is the expression asked.
	Condition string `json:"condition"`
	// Passing counts the instances confirmed ACTIVE by the serving
	// version for which it holds.
	Passing int32 `json:"passing"`
	// Why says why the first other instance does not pass, or why the
	// condition could not be asked.
	Why string `json:"why,omitempty"`
}
