package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ClusterValuesKind is the kind of a platform's per-cluster values.
const ClusterValuesKind = "ClusterValues"

// ClusterValuesCRDName is the name of the ClusterValues CRD.
const ClusterValuesCRDName = "clustervalues.fleetgraph.dev"

// MaxClusterValuesBytes bounds spec.values of one ClusterValues object, as
// JSON: a larger one is refused (condition Accepted False, reason
// TooLarge) and gives no values. The platform writes these objects, not
// tenants; the bound keeps the hub's memory and every reconcile that
// reads the values small whatever it writes.
const MaxClusterValuesBytes = 32 << 10

// The conditions of a ClusterValues object, and their reasons.
const (
	// ClusterValuesAccepted is True when the hub uses the object: its
	// selector parses, its values are a JSON object within
	// MaxClusterValuesBytes.
	ClusterValuesAccepted = "Accepted"
	// ClusterValuesConflict is True when, on some engaged cluster, an
	// object of the same rank (both for every graph, or both for the same
	// graph) sets one of this object's keys to another value and wins,
	// because its name sorts later. The message names the keys, the
	// winner and the clusters (a few of them).
	ClusterValuesConflict = "Conflict"

	// ReasonValuesTooLarge: spec.values passes MaxClusterValuesBytes.
	ReasonValuesTooLarge = "TooLarge"
	// ReasonInvalidSelector: spec.clusterSelector does not parse.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonInvalidValues: spec.values is not a JSON object.
	ReasonInvalidValues = "InvalidValues"
	// ReasonValuesAccepted: the object is used.
	ReasonValuesAccepted = "Accepted"
	// ReasonOverridden: a later object of the same rank wins a key.
	ReasonOverridden = "Overridden"
	// ReasonNoConflict: no object of the same rank overrides a key.
	ReasonNoConflict = "NoConflict"
)

// ClusterValues gives graphs values per cluster, without CEL in every
// field of the RGD: a graph reads them as cluster.values.<key> (a
// fleetgraph extension). The platform writes these objects on the hub;
// tenants, who write RGDs and instances, cannot forge them, and nothing in
// an instance reaches cluster.values.
//
// The values a graph reads on a cluster merge every accepted object whose
// spec.graph is empty or names the graph and whose spec.clusterSelector
// matches the cluster's labels, key by key (top-level keys; a key's value
// is replaced whole, never merged): first the objects for every graph,
// then those naming the graph, each in name order; a later object's key
// wins. So "defaults for every graph" and "this graph's values" layer
// without conflict, and two objects of the same rank that disagree on a
// key are reported (condition Conflict) on the one that loses.
//
// +kubebuilder:object:root=true
type ClusterValues struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ClusterValuesSpec   `json:"spec"`
	Status            ClusterValuesStatus `json:"status,omitempty"`
}

// ClusterValuesList is a list of ClusterValues.
//
// +kubebuilder:object:root=true
type ClusterValuesList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterValues `json:"items"`
}

// ClusterValuesSpec says which graphs read which values on which clusters.
type ClusterValuesSpec struct {
	// Graph names the graph (the RGD's name) that reads the values.
	// Defaults to "": every graph.
	Graph string `json:"graph,omitempty"`
	// ClusterSelector picks the clusters, by the labels the provider gives
	// them (the labels placement and cluster.labels use). Nil selects every
	// cluster, as does an empty selector.
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// Values is a JSON object: its keys are what the graph reads under
	// cluster.values. At most MaxClusterValuesBytes.
	Values apiextensionsv1.JSON `json:"values"`
}

// ClusterValuesStatus is what the hub makes of the object.
type ClusterValuesStatus struct {
	// ObservedGeneration is the generation of the spec the status is for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Clusters is how many of the clusters the hub engages the selector
	// matches.
	Clusters int32 `json:"clusters"`
	// Conditions are Accepted and Conflict.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterValuesCRD returns the CRD that serves ClusterValues on the hub.
// Like the other fleetgraph.dev kinds it is cluster-scoped: a tenant's
// namespaced permissions never reach it.
func ClusterValuesCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	spec := object(map[string]apiextensionsv1.JSONSchemaProps{
		"graph":           str,
		"clusterSelector": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
		"values":          {Type: "object", XPreserveUnknownFields: ptr.To(true)},
	}, "values")
	condition := object(map[string]apiextensionsv1.JSONSchemaProps{
		"type": str, "status": str, "reason": str, "message": str,
		"observedGeneration": {Type: "integer", Format: "int64"},
		"lastTransitionTime": {Type: "string", Format: "date-time"},
	}, "type", "status")
	status := object(map[string]apiextensionsv1.JSONSchemaProps{
		"observedGeneration": {Type: "integer", Format: "int64"},
		"clusters":           {Type: "integer", Format: "int32"},
		"conditions":         {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &condition}},
	})
	return hubCRD(ClusterValuesKind, "clustervalues", "fgcv", apiextensionsv1.CustomResourceDefinitionVersion{
		Name: GroupVersion.Version, Served: true, Storage: true,
		Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type:       "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": status},
			Required:   []string{"spec"},
		}},
		AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "GRAPH", Type: "string", JSONPath: ".spec.graph"},
			{Name: "CLUSTERS", Type: "integer", JSONPath: ".status.clusters"},
			{Name: "ACCEPTED", Type: "string", JSONPath: `.status.conditions[?(@.type=="Accepted")].status`},
			{Name: "CONFLICT", Type: "string", JSONPath: `.status.conditions[?(@.type=="Conflict")].status`},
			{Name: "AGE", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
	})
}
