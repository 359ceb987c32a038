package v1alpha1

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kro "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// GraphRevisionKind is the kind of a revision record.
const GraphRevisionKind = "GraphRevision"

// GraphRevisionCRDName is the name of the GraphRevision CRD.
const GraphRevisionCRDName = "graphrevisions.fleetgraph.dev"

// LabelGraphRevision, on a CRD fleetgraph applied to a spoke, holds the
// number of the GraphRevision it was generated from; on a GraphRevision it
// holds its own number. The hub reads it back after a restart to know which
// revision a cluster serves.
const LabelGraphRevision = "fleetgraph.dev/graph-revision"

// LabelGraphName, on a GraphRevision, names its ResourceGraphDefinition, so
// that the revisions of one graph are listed by label.
const LabelGraphName = "fleetgraph.dev/graph"

// GraphRevision is an immutable record of one accepted spec of a
// ResourceGraphDefinition.
//
// +kubebuilder:object:root=true
type GraphRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GraphRevisionSpec `json:"spec"`
}

// GraphRevisionList is a list of GraphRevisions.
//
// +kubebuilder:object:root=true
type GraphRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GraphRevision `json:"items"`
}

// GraphRevisionSpec is what a revision records. It never changes.
type GraphRevisionSpec struct {
	// Revision is the revision number, counted from 1 per graph name.
	Revision int64 `json:"revision"`
	// Snapshot is the RGD as it was when the revision was issued.
	Snapshot ResourceGraphDefinitionSnapshot `json:"snapshot"`
}

// ResourceGraphDefinitionSnapshot captures an RGD's identity and spec.
type ResourceGraphDefinitionSnapshot struct {
	// Name is the RGD's name.
	Name string `json:"name"`
	// Generation is the RGD's metadata.generation (0 for a graph registered
	// from Go without one).
	Generation int64 `json:"generation"`
	// AllowBreakingChanges records the RGD's breaking-change opt-in.
	AllowBreakingChanges bool `json:"allowBreakingChanges,omitempty"`
	// Spec is the RGD's spec.
	Spec kro.ResourceGraphDefinitionSpec `json:"spec"`
}

// RevisionName names revision rev of the named graph: "<graph>-r00001".
func RevisionName(graph string, rev int64) string {
	return fmt.Sprintf("%s-r%05d", graph, rev)
}

// GraphRevisionCRD returns the CRD that serves GraphRevision on the hub.
// The spec is immutable (a CEL rule), the snapshot's RGD spec is stored as
// is.
func GraphRevisionCRD() *apiextensionsv1.CustomResourceDefinition {
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	spec := object(map[string]apiextensionsv1.JSONSchemaProps{
		"revision": {Type: "integer", Format: "int64", Minimum: ptr.To(1.0)},
		"snapshot": object(map[string]apiextensionsv1.JSONSchemaProps{
			"name":                 str,
			"generation":           integer,
			"allowBreakingChanges": {Type: "boolean"},
			"spec":                 {Type: "object", XPreserveUnknownFields: ptr.To(true)},
		}, "name", "spec"),
	}, "revision", "snapshot")
	spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "self == oldSelf", Message: "spec is immutable"}}
	return hubCRD(GraphRevisionKind, "graphrevisions", "fgr", apiextensionsv1.CustomResourceDefinitionVersion{
		Name: GroupVersion.Version, Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type:       "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
			Required:   []string{"spec"},
		}},
		AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "RGD", Type: "string", JSONPath: ".spec.snapshot.name"},
			{Name: "REVISION", Type: "integer", JSONPath: ".spec.revision"},
			{Name: "AGE", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
	})
}
