// Package crdschema applies a CRD's schema the way the API server does when
// it reads a custom resource, for code that holds objects the server sent
// under an older schema (the spoke runtime's informer caches) or that plays
// the server itself (the fake clusters of package testing).
package crdschema

import (
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime"
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
// does on every read: a field that is absent, or null where the schema
// does not allow null, gets a copy of its default, at every depth (object
// properties, additionalProperties, list items). A nil schema changes
// nothing.
//
// It gives what k8s.io/apiextensions-apiserver's schema/defaulting.Default
// gives (a test compares them), without importing that package, whose
// default validation pulls in CEL: this package is below the fake clusters
// of package testing, which must not depend on CEL.
func Default(obj map[string]any, s *structuralschema.Structural) {
	defaultValue(obj, s)
}

// defaultValue defaults v, a decoded JSON value, against s.
func defaultValue(v any, s *structuralschema.Structural) {
	if s == nil {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		defaultObject(v, s)
	case []any:
		for i := range v {
			v[i] = withDefault(v[i], s.Items)
			defaultValue(v[i], s.Items)
		}
	}
}

// defaultObject sets the defaults of s's properties on obj first, then
// walks every field: a property against its schema, any other field
// against additionalProperties.
func defaultObject(obj map[string]any, s *structuralschema.Structural) {
	for name, prop := range s.Properties {
		if prop.Default.Object == nil {
			continue
		}
		if v, ok := obj[name]; !ok || nonNullableNull(v, &prop) {
			obj[name] = runtime.DeepCopyJSONValue(prop.Default.Object)
		}
	}
	for name, v := range obj {
		if prop, ok := s.Properties[name]; ok {
			defaultValue(v, &prop)
			continue
		}
		if s.AdditionalProperties == nil {
			continue
		}
		extra := s.AdditionalProperties.Structural
		obj[name] = withDefault(v, extra)
		defaultValue(obj[name], extra)
	}
}

// withDefault is a copy of s's default in place of v when v is a null s
// does not allow, else v.
func withDefault(v any, s *structuralschema.Structural) any {
	if !nonNullableNull(v, s) {
		return v
	}
	return runtime.DeepCopyJSONValue(s.Default.Object)
}

// nonNullableNull reports whether v is null where s does not allow it.
func nonNullableNull(v any, s *structuralschema.Structural) bool {
	return v == nil && s != nil && !s.Generic.Nullable
}
