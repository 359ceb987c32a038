// Package v1alpha1 holds the ResourceGraphDefinition API types, wire-compatible
// with kro.run/v1alpha1 so that a kro RGD applies unchanged.
//
// Not built yet: the types, their deepcopy functions and the RGD CRD manifest.
package v1alpha1
