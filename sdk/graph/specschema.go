package graph

import (
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// specSchemaOf is toSpecSchema without the trip through JSON, which cost
// an eighth of a small graph's compile. It converts the fields a
// SimpleSchema schema uses (and objectMetaSchema), exactly as the JSON
// trip would, and reports false for a schema that sets any other, which
// toSpecSchema then converts (specschema_test.go keeps both in step, and
// fails when apiextensions gains a field).
func specSchemaOf(s *apiextensionsv1.JSONSchemaProps) (*spec.Schema, bool) {
	out := &spec.Schema{}
	if !convertSchema(s, out) {
		return nil, false
	}
	return out, true
}

func convertSchema(s *apiextensionsv1.JSONSchemaProps, out *spec.Schema) bool {
	if !onlySimpleFields(s) {
		return false
	}
	p := &out.SchemaProps
	if s.Type != "" {
		p.Type = spec.StringOrArray{s.Type}
	}
	p.Description, p.Pattern = s.Description, s.Pattern
	p.Maximum, p.Minimum = s.Maximum, s.Minimum
	p.MaxLength, p.MinLength, p.MaxItems, p.MinItems = s.MaxLength, s.MinLength, s.MaxItems, s.MinItems
	p.Required = s.Required
	if s.Default != nil && !decodeJSON(s.Default.Raw, &p.Default) {
		return false
	}
	for _, e := range s.Enum {
		var v any
		if !decodeJSON(e.Raw, &v) {
			return false
		}
		p.Enum = append(p.Enum, v)
	}
	if s.Items != nil {
		p.Items = &spec.SchemaOrArray{Schema: &spec.Schema{}}
		if !convertSchema(s.Items.Schema, p.Items.Schema) {
			return false
		}
	}
	if len(s.Properties) > 0 {
		p.Properties = make(map[string]spec.Schema, len(s.Properties))
		for k, v := range s.Properties {
			var ps spec.Schema
			if !convertSchema(&v, &ps) {
				return false
			}
			p.Properties[k] = ps
		}
	}
	if ap := s.AdditionalProperties; ap != nil {
		p.AdditionalProperties = &spec.SchemaOrBool{Allows: ap.Allows}
		if ap.Schema != nil {
			p.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: &spec.Schema{}}
			if !convertSchema(ap.Schema, p.AdditionalProperties.Schema) {
				return false
			}
		}
	}
	return convertExtensions(s, out)
}

// convertExtensions sets the x-kubernetes-* extensions as JSON decoding
// would: keys as written, values decoded into any.
func convertExtensions(s *apiextensionsv1.JSONSchemaProps, out *spec.Schema) bool {
	ext := spec.Extensions{}
	if s.XPreserveUnknownFields != nil {
		ext["x-kubernetes-preserve-unknown-fields"] = *s.XPreserveUnknownFields
	}
	if s.XListType != nil {
		ext["x-kubernetes-list-type"] = *s.XListType
	}
	if len(s.XListMapKeys) > 0 {
		keys := make([]any, len(s.XListMapKeys))
		for i, k := range s.XListMapKeys {
			keys[i] = k
		}
		ext["x-kubernetes-list-map-keys"] = keys
	}
	if len(s.XValidations) > 0 {
		raw, err := json.Marshal(s.XValidations)
		var rules any
		if err != nil || !decodeJSON(raw, &rules) {
			return false
		}
		ext["x-kubernetes-validations"] = rules
	}
	if len(ext) > 0 {
		out.Extensions = ext
	}
	return true
}

// onlySimpleFields reports whether s sets no field but those
// convertSchema converts.
func onlySimpleFields(s *apiextensionsv1.JSONSchemaProps) bool {
	rest := *s
	rest.Type, rest.Description, rest.Pattern = "", "", ""
	rest.Maximum, rest.Minimum = nil, nil
	rest.MaxLength, rest.MinLength, rest.MaxItems, rest.MinItems = nil, nil, nil, nil
	rest.Required, rest.Default, rest.Enum = nil, nil, nil
	rest.Properties, rest.AdditionalProperties = nil, nil
	rest.XPreserveUnknownFields, rest.XListType, rest.XListMapKeys, rest.XValidations = nil, nil, nil, nil
	if rest.Items != nil && rest.Items.Schema != nil && len(rest.Items.JSONSchemas) == 0 {
		rest.Items = nil
	}
	return isZeroSchema(&rest)
}

// isZeroSchema reports whether s sets nothing. It compares fields one by
// one because JSONSchemaProps holds slices and maps.
func isZeroSchema(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.ID == "" && s.Schema == "" && s.Ref == nil && s.Title == "" && s.Format == "" &&
		!s.ExclusiveMaximum && !s.ExclusiveMinimum && s.MultipleOf == nil &&
		s.MaxProperties == nil && s.MinProperties == nil && !s.UniqueItems && !s.Nullable &&
		s.Items == nil && s.AllOf == nil && s.OneOf == nil && s.AnyOf == nil && s.Not == nil &&
		s.PatternProperties == nil && s.Dependencies == nil && s.AdditionalItems == nil &&
		s.Definitions == nil && s.ExternalDocs == nil && s.Example == nil &&
		!s.XEmbeddedResource && s.XIntOrString == false && s.XMapType == nil
}

func decodeJSON(raw []byte, v *any) bool {
	return json.Unmarshal(raw, v) == nil
}
