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
// *PathError. The schema may expand as far as the default Bounds allow.
func ToOpenAPI(root string, obj map[string]any, types map[string]any) (*apiextensionsv1.JSONSchemaProps, error) {
	out, err := Convert(root, obj, types)
	return out.Schema, err
}

// Extension is one use of SimpleSchema syntax that fleetgraph accepts and
// kro v0.9.4 rejects (or reads differently).
type Extension struct {
	// Path is where it is used, as in PathError.
	Path string
	// Feature names the syntax, e.g. "number type".
	Feature string
}

// Warning is a marker that kro v0.9.4 and the API server accept, and that
// fleetgraph copies into the schema as they do, but that constrains
// nothing (minimum on a string) or leaves a field no value can satisfy
// (minimum above maximum, an enum value the field's own bounds refuse).
type Warning struct {
	// Path is where it is used, as in PathError.
	Path string
	// Message says what is wrong, naming the markers.
	Message string
}

// Result is what Convert builds.
type Result struct {
	// Schema is the OpenAPI schema; partial when Convert returns an error.
	Schema *apiextensionsv1.JSONSchemaProps
	// Extensions lists the syntax the schema uses that kro rejects, in
	// path order.
	Extensions []Extension
	// Warnings lists the markers that constrain nothing or that no value
	// can satisfy, in path order.
	Warnings []Warning
}

// Convert is ToOpenAPI that also lists the extensions the schema uses and
// the warnings its markers raise. The schema may expand as far as the
// default Bounds allow.
func Convert(root string, obj map[string]any, types map[string]any) (Result, error) {
	return Bounds{}.Convert(root, obj, types)
}

// Convert is the package's Convert with b as the bounds of the expansion.
func (b Bounds) Convert(root string, obj map[string]any, types map[string]any) (Result, error) {
	c := &converter{
		defs: types, done: map[string]*apiextensionsv1.JSONSchemaProps{}, required: map[string]bool{},
		sizes: map[string]size{}, bounds: b.withDefaults(),
	}
	for _, name := range sortedKeys(types) {
		c.custom(name)
	}
	c.size = size{}
	out := c.object(pathOf(root), obj)
	slices.SortStableFunc(c.exts, func(a, b Extension) int { return strings.Compare(a.Path, b.Path) })
	slices.SortStableFunc(c.warns, func(a, b Warning) int { return strings.Compare(a.Path, b.Path) })
	if c.shared {
		// Custom types were used by reference while the size was counted;
		// now that it is known to fit (what a bound refused was left out),
		// every use gets a copy of its own.
		out = out.DeepCopy()
	}
	return Result{Schema: out, Extensions: c.exts, Warnings: c.warns}, errors.Join(c.errs...)
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
	warns    []Warning

	bounds Bounds
	// sizes is what each resolved custom type expands to.
	sizes map[string]size
	// size is what the schema being built (the spec, or the custom type
	// being resolved) has expanded to so far; level is the depth of the
	// node being built in it.
	size  size
	level int
	// tooLarge holds the custom types refused by a bound: their uses fail
	// without repeating the error.
	tooLarge map[string]bool
	// shared is set once a custom type is used: uses share the type's
	// schema until the result is copied at the end.
	shared bool
}

func (c *converter) ext(p *path, feature string) {
	c.exts = append(c.exts, Extension{Path: p.String(), Feature: feature})
}

func (c *converter) warn(p *path, msg string) {
	c.warns = append(c.warns, Warning{Path: p.String(), Message: msg})
}

func (c *converter) fail(p *path, err error) {
	c.errs = append(c.errs, &PathError{Path: p.String(), Err: err})
}

func (c *converter) object(p *path, obj map[string]any) *apiextensionsv1.JSONSchemaProps {
	out := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	if !c.enter(p) {
		return out
	}
	defer c.leave()
	c.grow(p, "", size{bytes: ownBytes(out)})
	for _, key := range sortedKeys(obj) {
		kp := p.key(key)
		if !c.grow(kp, "", size{props: 1, bytes: len(key) + 4}) {
			break
		}
		child, required := c.field(kp, obj[key])
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
func (c *converter) field(p *path, v any) (*apiextensionsv1.JSONSchemaProps, bool) {
	switch v := v.(type) {
	case map[string]any:
		obj := c.object(p, v)
		defaultEmptyObject(obj)
		return obj, false
	case string:
		return c.leaf(p, v)
	case []any:
		c.ext(p, "YAML list as a type")
		if len(v) != 1 {
			c.fail(p, fmt.Errorf("%w: a list must hold exactly one element, the item type", ErrSyntax))
			return nil, false
		}
		if !c.enter(p) {
			return nil, false
		}
		defer c.leave()
		out := &apiextensionsv1.JSONSchemaProps{Type: "array"}
		c.grow(p, "", size{bytes: ownBytes(out) + len(`"items":`)})
		items, _ := c.field(p.items(), v[0])
		if items == nil {
			return nil, false
		}
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}
		return out, false
	default:
		c.fail(p, fmt.Errorf("%w: want a type string or a nested object, got %s", ErrSyntax, describe(v)))
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

func (c *converter) leaf(p *path, s string) (*apiextensionsv1.JSONSchemaProps, bool) {
	f, err := ParseField(s)
	if err != nil {
		c.fail(p, err)
		return nil, false
	}
	out, err := c.typeSchema(p, f.Type)
	if err != nil {
		c.fail(p, err)
		return nil, false
	}
	if out == nil {
		return nil, false // a bound was passed; already reported
	}
	before := ownBytes(out)
	required, err := applyMarkers(out, f.Markers, func(feature string) { c.ext(p, feature) }, func(msg string) { c.warn(p, msg) })
	if err != nil {
		c.fail(p, err)
		return nil, false
	}
	if !c.grow(p, "", size{bytes: ownBytes(out) - before}) {
		return nil, false
	}
	if _, isCustom := c.defs[f.Type]; isCustom && c.required[f.Type] {
		required = true
	}
	return out, required
}

// typeSchema returns the schema of a type expression, for one use: the
// caller may set its own fields (markers), never those of its children. A
// nil schema with a nil error means a bound was passed (and reported).
func (c *converter) typeSchema(p *path, t string) (*apiextensionsv1.JSONSchemaProps, error) {
	var out *apiextensionsv1.JSONSchemaProps
	switch t {
	case "string", "integer", "boolean":
		out = &apiextensionsv1.JSONSchemaProps{Type: t}
	case "number":
		c.ext(p, "number type (kro spells it float)")
		out = &apiextensionsv1.JSONSchemaProps{Type: "number"}
	case "float":
		out = &apiextensionsv1.JSONSchemaProps{Type: "number"}
	case "object":
		out = &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}
	}
	if out != nil {
		if !c.grow(p, "", size{bytes: ownBytes(out)}) {
			return nil, nil
		}
		return out, nil
	}
	if elem, ok := strings.CutPrefix(t, "[]"); ok {
		return c.container(p, "array", elem, func(items *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
			return &apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}}
		})
	}
	if rest, ok := strings.CutPrefix(t, "map["); ok {
		return c.mapSchema(p, t, rest)
	}
	if _, ok := c.defs[t]; ok {
		return c.use(p, t)
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownType, t)
}

func (c *converter) mapSchema(p *path, t, rest string) (*apiextensionsv1.JSONSchemaProps, error) {
	key, elem, ok := strings.Cut(rest, "]")
	if !ok || elem == "" {
		return nil, fmt.Errorf("%w: malformed map type %q (want map[string]T)", ErrUnknownType, t)
	}
	if key != "string" {
		return nil, fmt.Errorf("%w: map keys must be string, got %q", ErrUnknownType, key)
	}
	return c.container(p, "object", elem, func(values *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
		return &apiextensionsv1.JSONSchemaProps{
			Type:                 "object",
			AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: values},
		}
	})
}

// container builds an array or a map of elem, one level deeper.
func (c *converter) container(p *path, typ, elem string, wrap func(*apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps) (*apiextensionsv1.JSONSchemaProps, error) {
	if !c.enter(p) {
		return nil, nil
	}
	defer c.leave()
	if !c.grow(p, "", size{bytes: len(typ) + len(`{"type":"","items":}`)}) {
		return nil, nil
	}
	inner, err := c.typeSchema(p, elem)
	if inner == nil || err != nil {
		return nil, err
	}
	return wrap(inner), nil
}

// use returns a use of custom type name at p. The use shares the type's
// schema below its top level, so that it costs nothing until Convert's
// final copy; its size is counted here, before anything is copied.
func (c *converter) use(p *path, name string) (*apiextensionsv1.JSONSchemaProps, error) {
	def := c.custom(name)
	if def == nil {
		if c.tooLarge[name] {
			c.size.over = true // reported where the type passed the bound
			return nil, nil
		}
		return nil, fmt.Errorf("%w: custom type %q is invalid", ErrUnknownType, name)
	}
	s := c.sizes[name]
	if c.level+s.depth > c.bounds.MaxDepth {
		c.bound(p, name, "depth", c.bounds.MaxDepth, c.level+s.depth)
		return nil, nil
	}
	if !c.grow(p, name, size{props: s.props, bytes: s.bytes}) {
		return nil, nil
	}
	c.size.depth = max(c.size.depth, c.level+s.depth)
	c.shared = true
	return shallowCopy(def), nil
}

// custom resolves a custom type once; nil means it is invalid (the error is
// already recorded).
func (c *converter) custom(name string) *apiextensionsv1.JSONSchemaProps {
	if s, ok := c.done[name]; ok {
		return s
	}
	p := pathOf("types." + name)
	if i := slices.Index(c.stack, name); i >= 0 {
		cycle := append(slices.Clone(c.stack[i:]), name)
		c.fail(p, fmt.Errorf("%w: %s", ErrTypeCycle, strings.Join(cycle, " -> ")))
		c.done[name] = nil
		return nil
	}
	c.stack = append(c.stack, name)
	defer func() { c.stack = c.stack[:len(c.stack)-1] }()
	// A type is counted on its own, from its top: its uses add its size to
	// whatever uses them.
	outerSize, outerLevel := c.size, c.level
	c.size, c.level = size{}, 0
	defer func() { c.size, c.level = outerSize, outerLevel }()

	before := len(c.errs)
	s, required := c.field(p, c.defs[name])
	c.required[name] = required
	if _, failed := c.done[name]; failed || len(c.errs) > before || c.size.over {
		s = nil
	}
	if c.size.over {
		if c.tooLarge == nil {
			c.tooLarge = map[string]bool{}
		}
		c.tooLarge[name] = true
	}
	c.done[name] = s
	c.sizes[name] = c.size
	return s
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
