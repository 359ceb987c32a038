package v1alpha1

import (
	"bytes"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ResourceGraphDefinition defines a new kind (the instance CRD, generated
// from spec.schema) and the resources that make up each instance of it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rgd
// +kubebuilder:printcolumn:name="APIVERSION",type=string,JSONPath=`.spec.schema.apiVersion`
// +kubebuilder:printcolumn:name="KIND",type=string,JSONPath=`.spec.schema.kind`
// +kubebuilder:printcolumn:name="STATE",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="CLUSTERS",type=integer,JSONPath=`.status.fleet.clusters`
// +kubebuilder:printcolumn:name="UNHEALTHY",type=integer,JSONPath=`.status.fleet.unhealthy`
// +kubebuilder:printcolumn:name="INSTANCES",type=integer,priority=1,JSONPath=`.status.fleet.instances`
// +kubebuilder:printcolumn:name="TOPOLOGICALORDER",type=string,priority=1,JSONPath=`.status.topologicalOrder`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceGraphDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceGraphDefinitionSpec   `json:"spec,omitempty"`
	Status ResourceGraphDefinitionStatus `json:"status,omitempty"`
}

// ResourceGraphDefinitionList is a list of ResourceGraphDefinitions.
//
// +kubebuilder:object:root=true
type ResourceGraphDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceGraphDefinition `json:"items"`
}

// ResourceGraphDefinitionSpec is the desired state: the instance schema and
// the resources of the graph.
type ResourceGraphDefinitionSpec struct {
	// Schema describes the generated kind: its group, version, kind and the
	// SimpleSchema of its spec and status.
	// +kubebuilder:validation:Required
	Schema Schema `json:"schema"`

	// Resources are the objects created (template) or read (externalRef)
	// for each instance. Expressions in them reference each other by id,
	// which orders them.
	// +optional
	Resources []Resource `json:"resources,omitempty"`

	// Target is the target of every resource without its own, and where
	// AllowedClusters narrows computed targets (a fleetgraph extension;
	// see Target).
	// +optional
	Target *Target `json:"target,omitempty"`
}

// Schema describes the generated instance kind.
type Schema struct {
	// APIVersion is the version of the generated CRD, e.g. v1alpha1.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=`^v[0-9]+(alpha[0-9]+|beta[0-9]+)?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="apiVersion is immutable"
	APIVersion string `json:"apiVersion"`

	// Kind is the kind of the generated CRD, in PascalCase.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=`^[A-Z][a-zA-Z0-9]{0,62}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="kind is immutable"
	Kind string `json:"kind"`

	// Group is the API group of the generated CRD. Defaults to kro.run.
	// +kubebuilder:default="kro.run"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="group is immutable"
	// +optional
	Group string `json:"group,omitempty"`

	// Scope of the generated CRD. Defaults to Namespaced.
	// +kubebuilder:default="Namespaced"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="scope is immutable"
	// +optional
	Scope ResourceScope `json:"scope,omitempty"`

	// Spec is the instance spec in SimpleSchema: each leaf is a string
	// "type | marker=value ...", each nested map an object.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Spec runtime.RawExtension `json:"spec,omitzero"`

	// Types are named SimpleSchema types that Spec (and other types) may
	// reference by name.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Types runtime.RawExtension `json:"types,omitzero"`

	// Status maps instance status fields to ${} CEL expressions; the field
	// types are inferred from the expressions.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Status runtime.RawExtension `json:"status,omitzero"`

	// AdditionalPrinterColumns replaces the generated CRD's default printer
	// columns (State, Ready, Age) when set.
	// +optional
	AdditionalPrinterColumns []apiextensionsv1.CustomResourceColumnDefinition `json:"additionalPrinterColumns,omitempty"`

	// ShortNames are kubectl aliases of the generated kind.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	ShortNames []string `json:"shortNames,omitempty"`

	// Categories the generated kind belongs to (kubectl get <category>).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	Categories []string `json:"categories,omitempty"`

	// Metadata is copied onto the generated CRD.
	// +optional
	Metadata *CRDMetadata `json:"metadata,omitempty"`
}

// ResourceScope is the scope of the generated CRD.
// +kubebuilder:validation:Enum=Namespaced;Cluster
type ResourceScope string

const (
	// ResourceScopeNamespaced makes instances namespaced (the default).
	ResourceScopeNamespaced ResourceScope = "Namespaced"
	// ResourceScopeCluster makes instances cluster-scoped.
	ResourceScopeCluster ResourceScope = "Cluster"
)

// CRDMetadata holds labels and annotations for the generated CRD.
type CRDMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Resource is one entry of spec.resources: exactly one of Template and
// ExternalRef is set.
//
// +kubebuilder:validation:XValidation:rule="has(self.template) != has(self.externalRef)",message="exactly one of template or externalRef must be provided"
type Resource struct {
	// ID names the resource in expressions: lowerCamelCase, unique.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	ID string `json:"id"`

	// Template is the object to create, with ${} expressions.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Template runtime.RawExtension `json:"template,omitzero"`

	// ExternalRef reads an existing object instead of creating one.
	// +optional
	ExternalRef *ExternalRef `json:"externalRef,omitempty"`

	// ReadyWhen lists conditions, each a "${...}" expression, that must all
	// be true for the resource to count as ready. They read the observed
	// object through the resource's own id, or, for a collection, each
	// observed item as `each`.
	// +optional
	ReadyWhen []string `json:"readyWhen,omitempty"`

	// IncludeWhen lists conditions, each a "${...}" expression over schema
	// and upstream resources, that must all be true for the resource to be
	// created.
	// +optional
	IncludeWhen []string `json:"includeWhen,omitempty"`

	// ForEach turns the resource into a collection: each entry binds one
	// iterator name to a "${...}" expression returning a list, and one
	// object is created per element of the cartesian product.
	// +optional
	ForEach []ForEachDimension `json:"forEach,omitempty"`

	// Target sends the resource to another cluster (a fleetgraph
	// extension; see Target).
	// +optional
	Target *Target `json:"target,omitempty"`
}

// ForEachDimension binds exactly one iterator name to a ${} list expression,
// e.g. {"region": "${schema.spec.regions}"}.
//
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:MaxProperties=1
type ForEachDimension map[string]string

// ExternalRef points at an object that the graph reads but never writes.
type ExternalRef struct {
	// +kubebuilder:validation:Required
	APIVersion string `json:"apiVersion"`
	// +kubebuilder:validation:Required
	Kind string `json:"kind"`
	// +kubebuilder:validation:Required
	Metadata ExternalRefMetadata `json:"metadata"`
}

// ExternalRefMetadata identifies the referenced object(s): by Name, or by
// Selector for a collection.
type ExternalRefMetadata struct {
	// Name of the object; may contain ${} expressions.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Name string `json:"name,omitempty"`

	// Namespace of the object. Empty means the instance's namespace for a
	// Name, and every namespace for a Selector.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Selector is a label selector (matchLabels/matchExpressions, whose
	// values may contain ${} expressions) or, as a fleetgraph extension
	// kro's CRD refuses, a single "${...}" expression that evaluates to one.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Selector runtime.RawExtension `json:"selector,omitzero"`
}

// HasSelector reports whether a selector is set.
func (m ExternalRefMetadata) HasSelector() bool {
	raw := bytes.TrimSpace(m.Selector.Raw)
	return (len(raw) > 0 && string(raw) != "null") || m.Selector.Object != nil
}

// ResourceGraphDefinitionState summarises whether the graph is served.
type ResourceGraphDefinitionState string

const (
	// StateActive means the graph compiled and its CRD is served.
	StateActive ResourceGraphDefinitionState = "Active"
	// StateInactive means the graph is not (or no longer) served.
	StateInactive ResourceGraphDefinitionState = "Inactive"
)

// Condition types set on a ResourceGraphDefinition.
const (
	// ConditionReady summarises the other conditions.
	ConditionReady = "Ready"
	// ConditionGraphAccepted is true when the graph compiled.
	ConditionGraphAccepted = "GraphAccepted"
)

// ResourceGraphDefinitionStatus is the observed state.
type ResourceGraphDefinitionStatus struct {
	// State is Active when the graph is accepted and served.
	// +optional
	State ResourceGraphDefinitionState `json:"state,omitempty"`

	// ObservedGeneration is the metadata.generation last compiled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastIssuedRevision is the highest revision number the hub issued for
	// this RGD (GraphRevision records, fleetgraph.dev/v1alpha1, named
	// "<rgd>-r00001"), as kro's field of the same name.
	// +optional
	LastIssuedRevision int64 `json:"lastIssuedRevision,omitempty"`

	// TopologicalOrder lists resource ids in creation order.
	// +optional
	TopologicalOrder []string `json:"topologicalOrder,omitempty"`

	// Conditions are the latest observations.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Resources lists each resource with the ids it depends on.
	// +optional
	Resources []ResourceInformation `json:"resources,omitempty"`

	// Fleet summarises the graph across the clusters of the fleet.
	// +optional
	Fleet *FleetStatus `json:"fleet,omitempty"`
}

// ResourceInformation is one resource and its dependencies.
type ResourceInformation struct {
	ID           string       `json:"id,omitempty"`
	Dependencies []Dependency `json:"dependencies,omitempty"`
}

// Dependency names a resource that another depends on.
type Dependency struct {
	ID string `json:"id,omitempty"`
}

// MaxUnhealthyClusters bounds FleetStatus.UnhealthyClusters, and
// FleetStatus.NotLatestClusters, so that the status of a graph on a large
// fleet stays small.
const MaxUnhealthyClusters = 20

// MaxTargets bounds FleetStatus.Targets.
const MaxTargets = 20

// MaxRevisions bounds FleetStatus.Revisions.
const MaxRevisions = 8

// FleetStatus is the graph's state across the fleet, written by the hub:
// a bounded summary of what the hub's FleetStatus says per cluster (the
// hub replicas' status records, ConfigMaps labelled
// fleetgraph.dev/fleet-status-of, hold every cluster).
type FleetStatus struct {
	// Clusters is the number of clusters placed to serve the graph.
	Clusters int32 `json:"clusters"`
	// Established is the number of clusters whose generated CRD is
	// established.
	Established int32 `json:"established"`
	// Unhealthy is the number of clusters with a problem: they do not
	// serve the revision they should (its CRD is not established, or the
	// cluster refuses it), or cannot be reached.
	Unhealthy int32 `json:"unhealthy"`
	// Instances is the number of instances across the fleet (of a hub
	// graph: on the hub).
	Instances int64 `json:"instances"`
	// ReadyInstances is the number of those that are ACTIVE.
	ReadyInstances int64 `json:"readyInstances"`
	// ErrorInstances is the number of those that are in ERROR.
	// +optional
	ErrorInstances int64 `json:"errorInstances,omitempty"`
	// LatestRevision is the revision of the graph's newest spec (a
	// GraphRevision number; absent while it has none).
	// +optional
	LatestRevision int64 `json:"latestRevision,omitempty"`
	// Revisions counts the clusters serving each revision, newest first,
	// at most MaxRevisions of them; clusters serving none are not counted.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Revisions []RevisionClusters `json:"revisions,omitempty"`
	// Message says in one line which revision serves the fleet and why
	// some clusters serve another: "serving revision 2 (revision 3 rolled
	// back: ...)".
	// +optional
	Message string `json:"message,omitempty"`
	// UnhealthyClusters lists some unhealthy clusters, sorted by name, at
	// most MaxUnhealthyClusters of them.
	// +kubebuilder:validation:MaxItems=20
	// +optional
	UnhealthyClusters []ClusterHealth `json:"unhealthyClusters,omitempty"`
	// NotLatestClusters lists some healthy clusters that serve, by
	// decision, another revision than the latest (held, rolled back,
	// failed within their wave's budget, or not reached by the rollout
	// yet), each with why, sorted by name, at most MaxUnhealthyClusters
	// of them; NotLatest counts them all.
	// +kubebuilder:validation:MaxItems=20
	// +optional
	NotLatestClusters []ClusterHealth `json:"notLatestClusters,omitempty"`
	// NotLatest is the number of such clusters.
	// +optional
	NotLatest int32 `json:"notLatest,omitempty"`
	// Targets lists, for a hub graph, the clusters its instances write to
	// (the hub's own as ""), sorted by name, at most MaxTargets of them;
	// TargetClusters counts them all.
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Targets []TargetHealth `json:"targets,omitempty"`
	// TargetClusters is the number of such clusters.
	// +optional
	TargetClusters int32 `json:"targetClusters,omitempty"`
}

// RevisionClusters is how many clusters serve one revision.
type RevisionClusters struct {
	// Revision is the revision (0: a spec the hub has not numbered).
	Revision int64 `json:"revision"`
	// Clusters is how many clusters serve it.
	Clusters int32 `json:"clusters"`
}

// ClusterHealth is the state of the graph on one cluster.
type ClusterHealth struct {
	// Name of the cluster, as the provider knows it.
	Name string `json:"name"`
	// State is a short machine-readable word: the CRD's state (Conflict,
	// Pending, Error, Unreachable...), or Updating for an established CRD
	// whose revision does not serve yet.
	State string `json:"state"`
	// Reason is why the cluster does not serve the latest revision (or the
	// revision it should): RollingOut, Held, RolledBack, Failed,
	// GateNotPassed, Incompatible, Unreachable or ReplicaGone.
	// +optional
	Reason string `json:"reason,omitempty"`
	// ServedRevision is the revision serving the cluster (absent: none).
	// +optional
	ServedRevision int64 `json:"servedRevision,omitempty"`
	// DesiredRevision is the revision the cluster should serve now.
	// +optional
	DesiredRevision int64 `json:"desiredRevision,omitempty"`
	// Message says what is wrong, or why, for humans.
	// +optional
	Message string `json:"message,omitempty"`
}

// TargetHealth is how a hub graph's instances use one target cluster.
type TargetHealth struct {
	// Name of the cluster; "" is the hub's own.
	Name string `json:"name"`
	// Instances is how many instances may have children there.
	Instances int32 `json:"instances"`
	// ReadyInstances is how many of those are ACTIVE.
	ReadyInstances int32 `json:"readyInstances"`
	// ErrorInstances is how many of those are in ERROR.
	// +optional
	ErrorInstances int32 `json:"errorInstances,omitempty"`
	// Deleting is how many of those are being deleted and wait for what
	// they wrote there.
	// +optional
	Deleting int32 `json:"deleting,omitempty"`
	// Engaged is false when the cluster has left the fleet while
	// instances still name it.
	Engaged bool `json:"engaged"`
	// Unreachable says why the cluster does not answer, if it does not.
	// +optional
	Unreachable string `json:"unreachable,omitempty"`
}

func init() {
	SchemeBuilder.Register(&ResourceGraphDefinition{}, &ResourceGraphDefinitionList{})
}
