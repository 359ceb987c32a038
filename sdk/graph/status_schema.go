package graph

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/fleetgraph/fleetgraph/sdk/graph/simpleschema"
)

// statusSchema infers the OpenAPI schema of projected status fields from
// their expressions' CEL types, as kro does, and counts its properties as
// it goes: projecting a large object many times would multiply it, so the
// instance schema as a whole (spec and status) is held to
// Limits.MaxSchemaProperties.
type statusSchema struct {
	envs  *celEnvs
	diag  *diagnostics
	limit int // Limits.MaxSchemaProperties

	specProps, used int
	// where is the status field being inferred, and expr its expression,
	// for the error.
	where, expr string
	exhausted   bool
}

// take counts n more status properties at where, and reports whether the
// schema is still within the limit (once it is not, the error is
// reported, once, and the rest is left free-form).
func (b *statusSchema) take(where string, n int) bool {
	if b.exhausted {
		return false
	}
	b.used += n
	if b.specProps+b.used <= b.limit {
		return true
	}
	b.exhausted = true
	b.diag.fail(&Error{Path: where, Expression: b.expr, Err: limitErrorf(ErrSchema, nil,
		"the status schema makes the instance schema at least %d properties (%d in spec), over the limit of %d (Limits.MaxSchemaProperties)",
		b.specProps+b.used, b.specProps, b.limit)})
	return false
}

// depthFits refuses status fields nested deeper than a CRD's schema may
// be.
func (b *statusSchema) depthFits(where string, depth int) bool {
	if depth < simpleschema.DefaultMaxDepth {
		return true
	}
	b.diag.fail(&Error{Path: where, Err: limitErrorf(ErrSchema, nil, "status fields nest more than %d levels deep (a CRD's schema cannot nest deeper)", simpleschema.DefaultMaxDepth)})
	return false
}

// countProperties counts the object fields of s at every depth.
func countProperties(s *apiextensionsv1.JSONSchemaProps) int {
	if s == nil {
		return 0
	}
	n := len(s.Properties)
	for _, p := range s.Properties {
		n += countProperties(&p)
	}
	if s.Items != nil {
		n += countProperties(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		n += countProperties(s.AdditionalProperties.Schema)
	}
	return n
}

// ofTemplate is the schema of what a compiled status value yields.
func (b *statusSchema) ofTemplate(t tmpl) apiextensionsv1.JSONSchemaProps {
	switch t := t.(type) {
	case *tmplExpr:
		return b.ofType(t.p.out, 0)
	case *tmplConcat:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	return anyValue()
}

// maxStatusDepth bounds how much of an object type is spelled out in the
// generated status schema; deeper parts preserve unknown fields.
const maxStatusDepth = 12

// ofType returns the OpenAPI schema for values of CEL type t.
//
// It follows kro's inference word for word where kro's shows on the wire:
// an optional or any other type it does not know is "unknown CEL type: T"
// accepting any value, null is "null type - any value allowed", an object
// type it cannot spell out accepts any properties.
func (b *statusSchema) ofType(t *cel.Type, depth int) apiextensionsv1.JSONSchemaProps {
	if t == nil {
		return anyValue()
	}
	switch t.Kind() {
	case types.DynKind, types.AnyKind:
		return anyValue()
	case types.NullTypeKind:
		return apiextensionsv1.JSONSchemaProps{Description: "null type - any value allowed", XPreserveUnknownFields: ptr(true)}
	case types.BoolKind:
		return apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	case types.IntKind, types.UintKind:
		return apiextensionsv1.JSONSchemaProps{Type: "integer"}
	case types.DoubleKind:
		return apiextensionsv1.JSONSchemaProps{Type: "number"}
	case types.StringKind:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	case types.TimestampKind:
		// kro's description, word for word: it is on the wire.
		return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time", Description: "Timestamp representing a creation time"}
	case types.BytesKind:
		return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "byte"}
	case types.ListKind:
		items := b.ofType(t.Parameters()[0], depth+1)
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
	case types.MapKind:
		values := b.ofType(t.Parameters()[1], depth+1)
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &values}}
	case types.StructKind:
		if decl, ok := b.envs.findDeclType(t.TypeName()); ok && depth < maxStatusDepth {
			return b.ofDecl(decl, depth)
		}
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true}}
	}
	return apiextensionsv1.JSONSchemaProps{Description: "unknown CEL type: " + t.String(), XPreserveUnknownFields: ptr(true)}
}

func (b *statusSchema) ofDecl(d *apiservercel.DeclType, depth int) apiextensionsv1.JSONSchemaProps {
	switch d {
	case timestampDecl, dateDecl, durationDecl: // kro: a timestamp or duration field, any value
		return anyValue()
	case bytesDecl:
		return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "byte"}
	}
	if depth < maxStatusDepth && d.ElemType != nil && (d.IsList() || d.IsMap()) {
		elem := b.ofDecl(d.ElemType, depth+1)
		if d.IsList() {
			return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &elem}}
		}
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &elem}}
	}
	if !d.IsObject() {
		return b.ofType(d.CelType(), depth)
	}
	if depth >= maxStatusDepth {
		return freeObject()
	}
	if !b.take(b.where, len(d.Fields)) {
		return freeObject()
	}
	out := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for name, f := range d.Fields {
		out.Properties[name] = b.ofDecl(f.Type, depth+1)
	}
	return out
}

func freeObject() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}
}

// anyValue accepts any JSON value (dyn).
func anyValue() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}
}

// statusBase is the status every instance has: kro's state and conditions.
func statusBase() map[string]apiextensionsv1.JSONSchemaProps {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	// kro's shape exactly: no formats, nothing required.
	cond := apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"type": str, "status": str, "reason": str, "message": str,
			"lastTransitionTime": str,
			"observedGeneration": {Type: "integer"},
		},
	}
	// The conditions list is atomic, as in kro's CRDs: the runtime always
	// writes it whole, so per-condition ownership would buy nothing, and it
	// would make every status write dearer for the API server (a managed
	// field per condition field: about 13% more CPU per write, measured).
	return map[string]apiextensionsv1.JSONSchemaProps{
		"state": str,
		"conditions": {
			Type:  "array",
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &cond},
		},
	}
}
