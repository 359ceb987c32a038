// +kubebuilder:object:generate=true
// +groupName=kro.run

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the ResourceGraphDefinition
	// API: kro.run/v1alpha1, the same as kro's, so that kro YAML applies
	// unchanged.
	GroupVersion = schema.GroupVersion{Group: "kro.run", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// DefaultGroup is the API group of a generated CRD whose schema.group is
// empty.
const DefaultGroup = "kro.run"
