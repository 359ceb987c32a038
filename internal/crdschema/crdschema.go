// Package crdschema applies a CRD's schema the way the API server does when
// it reads a custom resource, for code that holds objects the server sent
// under an older schema (the spoke runtime's informer caches) or that plays
// the server itself (the fake clusters of package testing).
package crdschema

import (
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
)

// Structural converts a CRD version's schema for defaulting. A schema that
// is not structural gives nil (no defaulting), as the API server would have
// refused the CRD.
func Structural(v *apiextensionsv1.CustomResourceValidation) *structuralschema.Structural {
	if v == nil || v.OpenAPIV3Schema == nil {
		return nil
	}
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.OpenAPIV3Schema, internal, nil); err != nil {
		return nil
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil
	}
	return s
}

// StorageSchema is Structural for the CRD's storage version (nil if it has
// none or the CRD is nil).
func StorageSchema(crd *apiextensionsv1.CustomResourceDefinition) *structuralschema.Structural {
	if crd == nil {
		return nil
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return Structural(v.Schema)
		}
	}
	return nil
}

// Default sets the schema's defaults on obj in place, as the API server
// does on every read. A nil schema changes nothing.
func Default(obj map[string]any, s *structuralschema.Structural) {
	if s != nil {
		structuraldefaulting.Default(obj, s)
	}
}
