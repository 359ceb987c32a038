package simpleschema

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

var (
	// ErrUnknownType is wrapped when a field names a type that is neither
	// built in nor declared in types.
	ErrUnknownType = errors.New("unknown type")
	// ErrUnknownMarker is wrapped when a field uses a marker SimpleSchema
	// does not define.
	ErrUnknownMarker = errors.New("unknown marker")
	// ErrInvalidMarker is wrapped when a marker's value does not suit it or
	// the field's type.
	ErrInvalidMarker = errors.New("invalid marker")
	// ErrTypeCycle is wrapped when custom types refer to each other in a
	// loop, which OpenAPI cannot express.
	ErrTypeCycle = errors.New("custom type cycle")
)

// PathError locates an error in the SimpleSchema tree: Path is dotted from
// the root given to ToOpenAPI (e.g. "spec.ports[].name") or, for custom
// types, "types.<Name>...".
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }

// ToOpenAPI converts a SimpleSchema object (the decoded YAML of
// spec.schema.spec) into an OpenAPI v3 object schema, resolving the custom
// types declared in types (spec.schema.types, may be nil). root prefixes the
// paths of errors, e.g. "spec". All errors are returned, joined; each is a
// *PathError.
func ToOpenAPI(root string, obj map[string]any, types map[string]any) (*apiextensionsv1.JSONSchemaProps, error) {
	out, _, err := Convert(root, obj, types)
	return out, err
}

// Extension is one use of SimpleSchema syntax that fleetgraph accepts and
// kro v0.9.3 rejects (or reads differently).
type Extension struct {
	// Path is where it is used, as in PathError.
	Path string
	// Feature names the syntax, e.g. "number type".
	Feature string
}

// Convert is ToOpenAPI that also lists the extensions the schema uses, in
// path order.
func Convert(root string, obj map[string]any, types map[string]any) (*apiextensionsv1.JSONSchemaProps, []Extension, error) {
	c := &converter{defs: types, done: map[string]*apiextensionsv1.JSONSchemaProps{}, required: map[string]bool{}}
	for _, name := range sortedKeys(types) {
		c.custom(name)
	}
	out := c.object(root, obj)
	slices.SortStableFunc(c.exts, func(a, b Extension) int { return strings.Compare(a.Path, b.Path) })
	return out, c.exts, errors.Join(c.errs...)
}

type converter struct {
	defs  map[string]any
	done  map[string]*apiextensionsv1.JSONSchemaProps // nil value: failed
	stack []string                                    // custom types being resolved
	// required holds the custom types declared as a string with
	// required=true: a field of such a type is required, as in kro.
	required map[string]bool
	errs     []error
	exts     []Extension
}

func (c *converter) ext(path, feature string) {
	c.exts = append(c.exts, Extension{Path: path, Feature: feature})
}

func (c *converter) fail(path string, err error) {
	c.errs = append(c.errs, &PathError{Path: path, Err: err})
}

func (c *converter) object(path string, obj map[string]any) *apiextensionsv1.JSONSchemaProps {
	out := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for _, key := range sortedKeys(obj) {
		child, required := c.field(join(path, key), obj[key])
		if child == nil {
			continue
		}
		out.Properties[key] = *child
		if required {
			out.Required = append(out.Required, key)
		}
	}
	return out
}

// field converts one entry of an object: a nested object, a leaf string or
// a one-element list (an array of that element).
func (c *converter) field(path string, v any) (*apiextensionsv1.JSONSchemaProps, bool) {
	switch v := v.(type) {
	case map[string]any:
		obj := c.object(path, v)
		defaultEmptyObject(obj)
		return obj, false
	case string:
		return c.leaf(path, v)
	case []any:
		c.ext(path, "YAML list as a type")
		if len(v) != 1 {
			c.fail(path, fmt.Errorf("%w: a list must hold exactly one element, the item type", ErrSyntax))
			return nil, false
		}
		items, _ := c.field(path+"[]", v[0])
		if items == nil {
			return nil, false
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}}, false
	default:
		c.fail(path, fmt.Errorf("%w: want a type string or a nested object, got %s", ErrSyntax, describe(v)))
		return nil, false
	}
}

// defaultEmptyObject gives a nested object without required fields the
// default {} when something inside it has a default, so that the API server
// fills those defaults even when the user omits the object.
func defaultEmptyObject(obj *apiextensionsv1.JSONSchemaProps) {
	if len(obj.Required) > 0 || obj.Default != nil {
		return
	}
	for _, p := range obj.Properties {
		if p.Default != nil {
			obj.Default = &apiextensionsv1.JSON{Raw: []byte("{}")}
			return
		}
	}
}

func (c *converter) leaf(path, s string) (*apiextensionsv1.JSONSchemaProps, bool) {
	f, err := ParseField(s)
	if err != nil {
		c.fail(path, err)
		return nil, false
	}
	out, err := c.typeSchema(path, f.Type)
	if err != nil {
		c.fail(path, err)
		return nil, false
	}
	required, err := applyMarkers(out, f.Markers, func(feature string) { c.ext(path, feature) })
	if err != nil {
		c.fail(path, err)
		return nil, false
	}
	if _, isCustom := c.defs[f.Type]; isCustom && c.required[f.Type] {
		required = true
	}
	return out, required
}

// typeSchema returns a fresh schema for a type expression.
func (c *converter) typeSchema(path, t string) (*apiextensionsv1.JSONSchemaProps, error) {
	switch t {
	case "string", "integer", "boolean":
		return &apiextensionsv1.JSONSchemaProps{Type: t}, nil
	case "number":
		c.ext(path, "number type (kro spells it float)")
		fallthrough
	case "float":
		return &apiextensionsv1.JSONSchemaProps{Type: "number"}, nil
	case "object":
		return &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}, nil
	}
	if elem, ok := strings.CutPrefix(t, "[]"); ok {
		items, err := c.typeSchema(path, elem)
		if err != nil {
			return nil, err
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}}, nil
	}
	if rest, ok := strings.CutPrefix(t, "map["); ok {
		return c.mapSchema(path, t, rest)
	}
	if _, ok := c.defs[t]; ok {
		def := c.custom(t)
		if def == nil {
			return nil, fmt.Errorf("%w: custom type %q is invalid", ErrUnknownType, t)
		}
		return def.DeepCopy(), nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownType, t)
}

func (c *converter) mapSchema(path, t, rest string) (*apiextensionsv1.JSONSchemaProps, error) {
	key, elem, ok := strings.Cut(rest, "]")
	if !ok || elem == "" {
		return nil, fmt.Errorf("%w: malformed map type %q (want map[string]T)", ErrUnknownType, t)
	}
	if key != "string" {
		return nil, fmt.Errorf("%w: map keys must be string, got %q", ErrUnknownType, key)
	}
	values, err := c.typeSchema(path, elem)
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.JSONSchemaProps{
		Type:                 "object",
		AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: values},
	}, nil
}

// custom resolves a custom type once; nil means it is invalid (the error is
// already recorded).
func (c *converter) custom(name string) *apiextensionsv1.JSONSchemaProps {
	if s, ok := c.done[name]; ok {
		return s
	}
	if i := slices.Index(c.stack, name); i >= 0 {
		cycle := append(slices.Clone(c.stack[i:]), name)
		c.fail("types."+name, fmt.Errorf("%w: %s", ErrTypeCycle, strings.Join(cycle, " -> ")))
		c.done[name] = nil
		return nil
	}
	c.stack = append(c.stack, name)
	defer func() { c.stack = c.stack[:len(c.stack)-1] }()

	before := len(c.errs)
	s, required := c.field("types."+name, c.defs[name])
	c.required[name] = required
	if _, failed := c.done[name]; failed || len(c.errs) > before {
		s = nil
	}
	c.done[name] = s
	return s
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func ptr[T any](v T) *T { return &v }
