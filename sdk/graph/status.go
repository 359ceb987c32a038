package graph

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// statusProgram evaluates spec.schema.status: one leaf per projected field.
type statusProgram struct {
	leaves []statusLeaf
}

type statusLeaf struct {
	path *fieldPath // inside status
	t    tmpl
}

// fieldPath is a path of object keys as a chain of parents: the leaves of
// a large status share their prefixes instead of each holding a copy.
type fieldPath struct {
	parent *fieldPath
	key    string
}

// eval computes every field whose inputs are present. Fields that wait on
// a resource are left out; other errors are joined and returned alongside
// the fields that did evaluate.
func (sp *statusProgram) eval(ctx context.Context, lim *Limits, vals Values) (map[string]any, error) {
	out := map[string]any{}
	if sp == nil {
		return out, nil
	}
	sc := newScope(ctx, lim, vals, nil, "")
	defer sc.done()
	sc.bound(newSizer("the status", "MaxStatusBytes", lim.MaxStatusBytes))
	var errs []error
	for _, leaf := range sp.leaves {
		v, ok, err := leaf.t.eval(sc)
		switch {
		case errors.Is(err, ErrPending):
			continue
		case errors.Is(err, ErrLimit):
			// A status past its bound is not written at all.
			return map[string]any{}, err
		case err != nil:
			errs = append(errs, err)
			continue
		case ok:
			setPath(out, leaf.path, v)
		}
	}
	return out, errors.Join(errs...)
}

func setPath(m map[string]any, p *fieldPath, v any) {
	objectAt(m, p.parent)[p.key] = v
}

// objectAt returns the object at p in m, making the missing ones.
func objectAt(m map[string]any, p *fieldPath) map[string]any {
	if p == nil {
		return m
	}
	parent := objectAt(m, p.parent)
	next, ok := parent[p.key].(map[string]any)
	if !ok {
		next = map[string]any{}
		parent[p.key] = next
	}
	return next
}

// reservedStatusFields are set by the runtime, not by projections.
// (conditions may hold the RGD's own conditions: see conditions.go.)
var reservedStatusFields = map[string]bool{"state": true}

// compileStatus compiles spec.schema.status and infers the OpenAPI schema
// of each projected field from its expression's type.
func (c *compiler) compileStatus() (*statusProgram, apiextensionsv1.JSONSchemaProps) {
	sp := &statusProgram{}
	obj, err := decodeObject(c.rgd.Spec.Schema.Status.Raw)
	if err != nil {
		c.fail(&Error{Path: "spec.schema.status", Err: errorf(ErrInvalid, "%v", err)})
		return sp, apiextensionsv1.JSONSchemaProps{}
	}
	if conds, ok := obj["conditions"]; ok {
		c.conditions = c.compileConditionList(conds)
		delete(obj, "conditions")
	}
	for k := range obj {
		if reservedStatusFields[k] {
			written, _ := obj[k].(string)
			c.fail(&Error{Path: "spec.schema.status." + k, Expression: written, Err: errorf(ErrInvalid, "status.%s is reserved for the runtime", k)})
			delete(obj, k)
		}
	}
	c.status.specProps = countProperties(c.specSchema)
	s := c.statusObject(sp, nil, "spec.schema.status", 0, obj)
	return sp, s
}

func (c *compiler) statusObject(sp *statusProgram, path *fieldPath, where string, depth int, obj map[string]any) apiextensionsv1.JSONSchemaProps {
	out := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	if !c.statusDepthFits(where, depth) || !c.takeStatusProperties(where, len(obj)) {
		return out
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := &fieldPath{parent: path, key: k}
		if s, ok := c.statusField(sp, p, clipPath(where+"."+k), depth+1, obj[k]); ok {
			out.Properties[k] = s
		}
	}
	return out
}

func (c *compiler) statusField(sp *statusProgram, path *fieldPath, where string, depth int, v any) (apiextensionsv1.JSONSchemaProps, bool) {
	c.status.where, c.status.expr = where, ""
	switch v := v.(type) {
	case map[string]any:
		return c.statusObject(sp, path, where, depth, v), true
	case string:
		c.status.expr = v
		tc := &templateCompiler{c: c, env: c.graphEnv}
		t := tc.value(where, v, nil)
		switch t := t.(type) {
		case *tmplExpr:
			c.checkStatusReads(where, v, t)
			sp.leaves = append(sp.leaves, statusLeaf{path: path, t: t})
			return c.schemaOfType(t.p.out, 0), true
		case *tmplConcat:
			c.checkStatusReads(where, v, t)
			sp.leaves = append(sp.leaves, statusLeaf{path: path, t: t})
			return apiextensionsv1.JSONSchemaProps{Type: "string"}, true
		}
		if !strings.Contains(v, "${") {
			c.fail(&Error{Path: where, Expression: v, Err: errorf(ErrInvalid, "a status field must be a ${} expression")})
		}
		return apiextensionsv1.JSONSchemaProps{}, false
	case []any:
		return c.statusList(sp, path, where, v)
	default:
		c.fail(&Error{Path: where, Err: errorf(ErrInvalid, "a status field must be a ${} expression or an object of them, got %T", v)})
		return apiextensionsv1.JSONSchemaProps{}, false
	}
}

// statusList compiles a list of expressions projected as one field; its
// items' schema is their common type (any value when they differ).
func (c *compiler) statusList(sp *statusProgram, path *fieldPath, where string, v []any) (apiextensionsv1.JSONSchemaProps, bool) {
	tc := &templateCompiler{c: c, env: c.graphEnv}
	t, ok := tc.value(where, v, nil).(*tmplList)
	if !ok {
		c.fail(&Error{Path: where, Err: errorf(ErrInvalid, "a status field must hold ${} expressions")})
		return apiextensionsv1.JSONSchemaProps{}, false
	}
	for i, item := range t.items {
		written, _ := v[i].(string)
		c.checkStatusReads(fmt.Sprintf("%s[%d]", where, i), written, item)
	}
	sp.leaves = append(sp.leaves, statusLeaf{path: path, t: t})
	var items *apiextensionsv1.JSONSchemaProps
	for _, item := range t.items {
		s := c.schemaOfTemplate(item)
		if items != nil && !reflect.DeepEqual(*items, s) {
			items = ptr(anyValue())
			break
		}
		items = &s
	}
	return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}}, true
}

// checkStatusReads refuses, as kro does, a projected status field whose
// expressions read neither schema nor a resource: a constant belongs in
// the CRD, not in every instance's status.
func (c *compiler) checkStatusReads(where, written string, t tmpl) {
	progs := t.programs(nil)
	if len(progs) == 0 {
		return
	}
	for _, p := range progs {
		if len(p.refs) > 0 {
			return
		}
	}
	c.fail(&Error{Path: where, Expression: written, Err: errorf(ErrInvalid, "a status field must read schema or a resource")})
}

// schemaOfTemplate is the schema of what a compiled status value yields.
func (c *compiler) schemaOfTemplate(t tmpl) apiextensionsv1.JSONSchemaProps {
	switch t := t.(type) {
	case *tmplExpr:
		return c.schemaOfType(t.p.out, 0)
	case *tmplConcat:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	return anyValue()
}

// maxStatusDepth bounds how much of an object type is spelled out in the
// generated status schema; deeper parts preserve unknown fields.
const maxStatusDepth = 12

// schemaOfType returns the OpenAPI schema for values of CEL type t.
//
// It follows kro's inference word for word where kro's shows on the wire:
// an optional or any other type it does not know is "unknown CEL type: T"
// accepting any value, null is "null type - any value allowed", an object
// type it cannot spell out accepts any properties.
func (c *compiler) schemaOfType(t *cel.Type, depth int) apiextensionsv1.JSONSchemaProps {
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
		items := c.schemaOfType(t.Parameters()[0], depth+1)
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
	case types.MapKind:
		values := c.schemaOfType(t.Parameters()[1], depth+1)
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &values}}
	case types.StructKind:
		if decl, ok := c.findDeclType(t.TypeName()); ok && depth < maxStatusDepth {
			return c.schemaOfDecl(decl, depth)
		}
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true}}
	}
	return apiextensionsv1.JSONSchemaProps{Description: "unknown CEL type: " + t.String(), XPreserveUnknownFields: ptr(true)}
}

func (c *compiler) schemaOfDecl(d *apiservercel.DeclType, depth int) apiextensionsv1.JSONSchemaProps {
	switch d {
	case timestampDecl, dateDecl, durationDecl: // kro: a timestamp or duration field, any value
		return anyValue()
	case bytesDecl:
		return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "byte"}
	}
	if depth < maxStatusDepth && d.ElemType != nil && (d.IsList() || d.IsMap()) {
		elem := c.schemaOfDecl(d.ElemType, depth+1)
		if d.IsList() {
			return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &elem}}
		}
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &elem}}
	}
	if !d.IsObject() {
		return c.schemaOfType(d.CelType(), depth)
	}
	if depth >= maxStatusDepth {
		return freeObject()
	}
	if !c.takeStatusProperties(c.status.where, len(d.Fields)) {
		return freeObject()
	}
	out := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for name, f := range d.Fields {
		out.Properties[name] = c.schemaOfDecl(f.Type, depth+1)
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
