package simpleschema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/graph/simpleschema"
)

// convert runs ToOpenAPI on a YAML spec (and optional types) and returns
// the schema as JSON-like data for readable comparisons.
func convert(t *testing.T, spec, types string) (map[string]any, error) {
	t.Helper()
	var s, ty map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(spec), &s))
	require.NoError(t, yaml.Unmarshal([]byte(types), &ty))
	out, err := simpleschema.ToOpenAPI("", s, ty)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(out)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m, nil
}

func field(t *testing.T, spec string) map[string]any {
	t.Helper()
	m, err := convert(t, spec, "")
	require.NoError(t, err)
	return m["properties"].(map[string]any)["f"].(map[string]any)
}

func TestTypes(t *testing.T) {
	tests := map[string]struct {
		spec string
		want map[string]any
	}{
		"string":  {`f: string`, map[string]any{"type": "string"}},
		"integer": {`f: integer`, map[string]any{"type": "integer"}},
		"boolean": {`f: boolean`, map[string]any{"type": "boolean"}},
		"float":   {`f: float`, map[string]any{"type": "number"}},
		"number":  {`f: number`, map[string]any{"type": "number"}},
		"object":  {`f: object`, map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		"list":    {`f: "[]string"`, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
		"list of lists": {`f: "[][]integer"`, map[string]any{"type": "array", "items": map[string]any{
			"type": "array", "items": map[string]any{"type": "integer"}}}},
		"map": {`f: "map[string]boolean"`, map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "boolean"}}},
		"map of lists": {`f: "map[string][]string"`, map[string]any{"type": "object", "additionalProperties": map[string]any{
			"type": "array", "items": map[string]any{"type": "string"}}}},
		"nested object": {"f:\n  a: string\n  b:\n    c: integer", map[string]any{"type": "object", "properties": map[string]any{
			"a": map[string]any{"type": "string"},
			"b": map[string]any{"type": "object", "properties": map[string]any{"c": map[string]any{"type": "integer"}}},
		}}},
		"list of objects": {"f:\n- name: string", map[string]any{"type": "array", "items": map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, field(t, tt.spec))
		})
	}
}

func TestMarkers(t *testing.T) {
	tests := map[string]struct {
		spec string
		want map[string]any
	}{
		"default string":       {`f: string | default="a b"`, map[string]any{"type": "string", "default": "a b"}},
		"default bare string":  {`f: string | default=nginx`, map[string]any{"type": "string", "default": "nginx"}},
		"default integer":      {`f: integer | default=3`, map[string]any{"type": "integer", "default": float64(3)}},
		"default float":        {`f: float | default=0.5`, map[string]any{"type": "number", "default": 0.5}},
		"default boolean":      {`f: boolean | default=true`, map[string]any{"type": "boolean", "default": true}},
		"default list":         {`f: '[]string | default=["a", "b"]'`, map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "default": []any{"a", "b"}}},
		"default object":       {`f: 'object | default={"k": [1, 2]}'`, map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true, "default": map[string]any{"k": []any{float64(1), float64(2)}}}},
		"description":          {`f: string | description="The \"name\" of it"`, map[string]any{"type": "string", "description": `The "name" of it`}},
		"minimum and maximum":  {`f: integer | minimum=1 maximum=10`, map[string]any{"type": "integer", "minimum": float64(1), "maximum": float64(10)}},
		"enum strings":         {`f: string | enum="a,b, c"`, map[string]any{"type": "string", "enum": []any{"a", "b", "c"}}},
		"enum integers":        {`f: integer | enum="1,2"`, map[string]any{"type": "integer", "enum": []any{float64(1), float64(2)}}},
		"pattern keeps \\d":    {`f: string | pattern="^\d+$"`, map[string]any{"type": "string", "pattern": `^\d+$`}},
		"min and max length":   {`f: string | minLength=1 maxLength=63`, map[string]any{"type": "string", "minLength": float64(1), "maxLength": float64(63)}},
		"min and max items":    {`f: "[]string | minItems=1 maxItems=3"`, map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": float64(1), "maxItems": float64(3)}},
		"uniqueItems is a set": {`f: "[]string | uniqueItems=true"`, map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "x-kubernetes-list-type": "set"}},
		"uniqueItems false":    {`f: "[]string | uniqueItems=false"`, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
		"listType atomic":      {`f: "[]string | listType=atomic"`, map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "x-kubernetes-list-type": "atomic"}},
		"immutable": {`f: string | immutable=true`, map[string]any{"type": "string", "x-kubernetes-validations": []any{
			map[string]any{"rule": "self == oldSelf", "message": "field is immutable"}}}},
		"validation": {`f: integer | validation="self % 2 == 0" validation="self < 100"`, map[string]any{"type": "integer", "x-kubernetes-validations": []any{
			map[string]any{"rule": "self % 2 == 0", "message": "validation failed"}, map[string]any{"rule": "self < 100", "message": "validation failed"}}}},
		"repeated marker: last wins":      {`f: string | default=a default=b`, map[string]any{"type": "string", "default": "b"}},
		"repeated required: any true":     {`f: string | required=true required=false`, map[string]any{"type": "string"}},
		"required leaves the field alone": {`f: string | required=true`, map[string]any{"type": "string"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, field(t, tt.spec))
		})
	}
}

func TestListMap(t *testing.T) {
	m, err := convert(t, `f: "[]Port | listType=map listMapKey=name"`, "Port:\n  name: string | required=true\n  port: integer")
	require.NoError(t, err)
	f := m["properties"].(map[string]any)["f"].(map[string]any)
	assert.Equal(t, "map", f["x-kubernetes-list-type"])
	assert.Equal(t, []any{"name"}, f["x-kubernetes-list-map-keys"])
}

func TestRequiredAndDefaultsPropagate(t *testing.T) {
	m, err := convert(t, "name: string | required=true\nopts:\n  level: integer | default=1\nstrict:\n  key: string | required=true\n  n: integer | default=2", "")
	require.NoError(t, err)
	assert.Equal(t, []any{"name"}, m["required"])
	props := m["properties"].(map[string]any)
	assert.Equal(t, map[string]any{}, props["opts"].(map[string]any)["default"], "an object with defaults inside defaults to {}")
	assert.NotContains(t, props["strict"], "default", "not when it has required fields")
	assert.Equal(t, []any{"key"}, props["strict"].(map[string]any)["required"])
}

func TestCustomTypes(t *testing.T) {
	m, err := convert(t, "main: Container | required=true\nsidecars: \"map[string]Container\"\nports: \"[]Port\"", `
Container:
  image: string | required=true
  port: Port
Port: integer | minimum=1 maximum=65535
`)
	require.NoError(t, err)
	props := m["properties"].(map[string]any)
	main := props["main"].(map[string]any)
	assert.Equal(t, "object", main["type"])
	assert.Equal(t, []any{"image"}, main["required"])
	assert.Equal(t, map[string]any{"type": "integer", "minimum": float64(1), "maximum": float64(65535)},
		main["properties"].(map[string]any)["port"])
	assert.Equal(t, main, props["sidecars"].(map[string]any)["additionalProperties"])
	assert.Equal(t, "integer", props["ports"].(map[string]any)["items"].(map[string]any)["type"])
	assert.Equal(t, []any{"main"}, m["required"])
}

// TestErrorsNameTheField has one failing case per type and marker rule; the
// error must name the field's path.
func TestErrorsNameTheField(t *testing.T) {
	tests := map[string]struct {
		spec, types string
		path        string
		kind        error
		msg         string
	}{
		"unknown type":             {spec: `f: strin`, path: "f", kind: simpleschema.ErrUnknownType, msg: `"strin"`},
		"unknown nested type":      {spec: "a:\n  b: \"[]Nope\"", path: "a.b", kind: simpleschema.ErrUnknownType, msg: `"Nope"`},
		"map key not string":       {spec: `f: "map[integer]string"`, path: "f", kind: simpleschema.ErrUnknownType, msg: "map keys must be string"},
		"malformed map":            {spec: `f: "map[string"`, path: "f", kind: simpleschema.ErrUnknownType, msg: "malformed map type"},
		"empty type":               {spec: `f: " | required=true"`, path: "f", kind: simpleschema.ErrSyntax, msg: `missing type in " | required=true"`},
		"unknown marker":           {spec: `f: string | requird=true`, path: "f", kind: simpleschema.ErrUnknownMarker, msg: `"requird"`},
		"marker without value":     {spec: `f: string | required`, path: "f", kind: simpleschema.ErrSyntax, msg: "has no value"},
		"unterminated quote":       {spec: `f: string | description="abc`, path: "f", kind: simpleschema.ErrSyntax, msg: "unterminated"},
		"unbalanced default":       {spec: `f: '[]string | default=["a"'`, path: "f", kind: simpleschema.ErrSyntax, msg: "unterminated"},
		"required not bool":        {spec: `f: string | required=yes`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "required"},
		"default wrong type":       {spec: `f: integer | default=abc`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "not an integer"},
		"default not boolean":      {spec: `f: boolean | default=1x`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "not a boolean"},
		"default not float":        {spec: `f: float | default=x`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "not a number"},
		"default list not json":    {spec: `f: '[]string | default={"a": 1}'`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "not a JSON array"},
		"maximum not a number":     {spec: `f: integer | maximum=ten`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "not a number"},
		"enum on boolean":          {spec: `f: boolean | enum="true"`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "only for string, integer and float"},
		"enum empty value":         {spec: `f: string | enum="a,,b"`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "empty value"},
		"enum bad integer":         {spec: `f: integer | enum="1,x"`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "not an integer"},
		"pattern invalid":          {spec: `f: string | pattern="a("`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "missing closing )"},
		"pattern on integer":       {spec: `f: integer | pattern="a"`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "only for string"},
		"minLength on integer":     {spec: `f: integer | minLength=1`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "only for string"},
		"minItems on string":       {spec: `f: string | minItems=1`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "only for array"},
		"maxItems not integer":     {spec: `f: "[]string | maxItems=x"`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "not an integer"},
		"uniqueItems on string":    {spec: `f: string | uniqueItems=true`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "only for array"},
		"uniqueItems on objects":   {spec: "f: \"[]P | uniqueItems=true\"", types: "P:\n  a: string", path: "f", kind: simpleschema.ErrInvalidMarker, msg: "scalar items"},
		"listType unknown":         {spec: `f: "[]string | listType=bag"`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "atomic, set or map"},
		"listType map of strings":  {spec: `f: "[]string | listType=map listMapKey=a"`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "object items"},
		"listMapKey without map":   {spec: "f: \"[]P | listMapKey=a\"", types: "P:\n  a: string | required=true", path: "f", kind: simpleschema.ErrInvalidMarker, msg: "needs listType=map"},
		"listType map without key": {spec: "f: \"[]P | listType=map\"", types: "P:\n  a: string", path: "f", kind: simpleschema.ErrInvalidMarker, msg: "needs listMapKey"},
		"listMapKey unknown":       {spec: "f: \"[]P | listType=map listMapKey=b\"", types: "P:\n  a: string", path: "f", kind: simpleschema.ErrInvalidMarker, msg: `"b" is not a field`},
		"listMapKey optional":      {spec: "f: \"[]P | listType=map listMapKey=a\"", types: "P:\n  a: string", path: "f", kind: simpleschema.ErrInvalidMarker, msg: "must be required or have a default"},
		"immutable not bool":       {spec: `f: string | immutable=always`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "true or false"},
		"validation empty":         {spec: `f: string | validation=""`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "empty rule"},
		"duplicate listMapKey":     {spec: "f: \"[]P | listType=map listMapKey=a listMapKey=a\"", types: "P:\n  a: string | required=true", path: "f", kind: simpleschema.ErrInvalidMarker, msg: `duplicate key "a"`},
		"default below minimum":    {spec: `f: integer | default=0 minimum=1`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "default=0 is less than minimum=1"},
		"default above maximum":    {spec: `f: float | maximum=1.5 default=2`, path: "f", kind: simpleschema.ErrInvalidMarker, msg: "default=2 is greater than maximum=1.5"},
		"bad leaf value":           {spec: `f: 3`, path: "f", kind: simpleschema.ErrSyntax, msg: "want a type string or a nested object, got the number 3"},
		"nothing after the pipe":   {spec: `f: "string |"`, path: "f", kind: simpleschema.ErrSyntax, msg: `"string |" has no marker after "|"`},
		"whitespace at the end":    {spec: `f: "string | required=true "`, path: "f", kind: simpleschema.ErrSyntax, msg: `"string | required=true " ends in whitespace after its last marker`},
		"a folded block":           {spec: "f: >\n  string | required=true\n", path: "f", kind: simpleschema.ErrSyntax, msg: "ends in whitespace after its last marker"},
		"list without element":     {spec: `f: "[]"`, path: "f", kind: simpleschema.ErrSyntax, msg: `type "[]" has no element type`},
		"nested too deep":          {spec: `f: "[][][][][][][][][][][][][][][][][]string"`, path: "f", kind: simpleschema.ErrSyntax, msg: "nests more than 16 lists and maps"},
		"list of two":              {spec: "f:\n- string\n- integer", path: "f", kind: simpleschema.ErrSyntax, msg: "exactly one element"},
		"custom type cycle":        {spec: `f: A`, types: "A:\n  b: B\nB:\n  a: \"[]A\"", path: "types.A", kind: simpleschema.ErrTypeCycle, msg: "A -> B -> A"},
		"self-referencing type":    {spec: `f: string`, types: "Node:\n  next: Node", path: "types.Node", kind: simpleschema.ErrTypeCycle, msg: "Node -> Node"},
		"error inside a type":      {spec: `f: T`, types: "T:\n  num: integer | minimum=x", path: "types.T.num", kind: simpleschema.ErrInvalidMarker, msg: "not a number"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := convert(t, tt.spec, tt.types)
			require.Error(t, err)
			require.ErrorIs(t, err, tt.kind)
			var pe *simpleschema.PathError
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, tt.path, pe.Path)
			assert.Contains(t, err.Error(), tt.path+": ")
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestAllErrorsAreReported(t *testing.T) {
	_, err := convert(t, "a: nope\nb: string | wat=1\nc: integer", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a: unknown type")
	assert.Contains(t, err.Error(), "b: unknown marker")
}

// As kro reads them: spaces after [] and map[string], and before a
// marker's "=", are dropped; sixteen nested collections are allowed.
func TestFieldSpellingsKroAccepts(t *testing.T) {
	assert.Equal(t, map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}, field(t, `f: "map[string] string"`))
	assert.Equal(t, map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": float64(1)}, field(t, `f: "[] string | minItems=1"`))
	m, err := convert(t, `f: "string | required =true"`, "")
	require.NoError(t, err)
	assert.Equal(t, []any{"f"}, m["required"])
	_, err = convert(t, `f: "`+strings.Repeat("[]", 16)+`string"`, "")
	assert.NoError(t, err)
}

func TestParseField(t *testing.T) {
	f, err := simpleschema.ParseField(`[]string | default=["a b", "c"] description="x \\ y" minItems=1`)
	require.NoError(t, err)
	assert.Equal(t, simpleschema.Field{Type: "[]string", Markers: []simpleschema.Marker{
		{Name: "default", Value: `["a b", "c"]`},
		{Name: "description", Value: `x \ y`},
		{Name: "minItems", Value: "1"},
	}}, f)
	assert.Contains(t, simpleschema.Markers(), "listMapKey")
}

// FuzzSimpleSchema feeds arbitrary field strings (with an arbitrary custom
// type) to the converter: it must never panic, every error must carry a
// path, and every schema it accepts must encode to JSON.
func FuzzSimpleSchema(f *testing.F) {
	seeds := []string{
		`string | required=true default="x"`, `integer | minimum=1 maximum=3 enum="1,2"`,
		`[]string | uniqueItems=true`, `map[string]T`, `[]T | listType=map listMapKey=a`,
		`object | default={"a": [1, {"b": "}"}]}`, `float | default=1e3`, `T | required=true`,
		`string | pattern="^[a-z]+$" validation="self.size() > 1" immutable=true`, `|`, `[][]map[string]T`,
	}
	for _, s := range seeds {
		f.Add(s, "string | default=x")
	}
	f.Fuzz(func(t *testing.T, field, typeField string) {
		out, err := simpleschema.ToOpenAPI("spec", map[string]any{"f": field}, map[string]any{"T": map[string]any{"a": typeField}})
		if err != nil {
			var pe *simpleschema.PathError
			if !errors.As(err, &pe) || pe.Path == "" {
				t.Fatalf("error without a path: %v", err)
			}
			return
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("schema does not encode: %v", err)
		}
		var _ *apiextensionsv1.JSONSchemaProps = out
	})
}

// Markers that contradict each other, or constrain nothing, are kept in
// the schema as kro v0.9.4 keeps them (the API server accepts them, and an
// instance that leaves the field out works) and reported as warnings that
// name the markers. A default outside the field's own bounds is refused:
// the API server refuses that CRD.
func TestContradictoryMarkersAreWarnings(t *testing.T) {
	tests := map[string]struct{ spec, want string }{
		"minimum above maximum":       {`f: integer | minimum=10 maximum=1`, "minimum=10 is greater than maximum=1"},
		"float minimum above maximum": {`f: float | maximum=0.5 minimum=0.75`, "minimum=0.75 is greater than maximum=0.5"},
		"no integer between":          {`f: integer | minimum=1.2 maximum=1.8`, "minimum=1.2 and maximum=1.8 leave no integer"},
		"minLength above maxLength":   {`f: string | minLength=5 maxLength=2`, "minLength=5 is greater than maxLength=2"},
		"minItems above maxItems":     {`f: "[]string | minItems=3 maxItems=2"`, "minItems=3 is greater than maxItems=2"},
		"enum below minimum":          {`f: integer | enum="1,5" minimum=3`, "enum value 1 is less than minimum=3"},
		"enum above maximum":          {`f: float | maximum=2 enum="1.5,2.5"`, "enum value 2.5 is greater than maximum=2"},
		"enum outside pattern":        {`f: string | enum="prod,Dev" pattern="^[a-z]+$"`, `enum value "Dev" does not match pattern="^[a-z]+$"`},
		"enum too long":               {`f: string | enum="ab,abcd" maxLength=3`, `enum value "abcd" is longer than maxLength=3`},
		"enum too short":              {`f: string | minLength=2 enum="a,ab"`, `enum value "a" is shorter than minLength=2`},
		"minimum on a string":         {`f: string | minimum=1`, `minimum="1": constrains only integer and float fields, not string: it has no effect`},
		"a negative maxLength":        {`f: string | maxLength=-1`, `maxLength="-1": a negative bound: it has no effect`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var s map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tt.spec), &s))
			res, err := simpleschema.Convert("", s, nil)
			require.NoError(t, err)
			require.Len(t, res.Warnings, 1)
			assert.Equal(t, "f", res.Warnings[0].Path)
			assert.True(t, strings.HasPrefix(res.Warnings[0].Message, tt.want), "%q does not start with %q", res.Warnings[0].Message, tt.want)
		})
	}
	var s map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(`f: string | minimum=1 maxLength=-1`), &s))
	res, err := simpleschema.Convert("", s, nil)
	require.NoError(t, err)
	f := res.Schema.Properties["f"]
	assert.Equal(t, 1.0, *f.Minimum, "kept as kro keeps it")
	assert.Equal(t, int64(-1), *f.MaxLength)
}

// A default the field's own markers refuse is refused: the API server
// refuses such a CRD.
func TestDefaultsOutsideTheMarkersAreRefused(t *testing.T) {
	tests := map[string]struct{ spec, want string }{
		"default outside pattern": {`f: string | default=Prod pattern="^[a-z]+$"`, `default="Prod" does not match pattern="^[a-z]+$"`},
		"default too long":        {`f: string | default=abcd maxLength=3`, `default="abcd" is longer than maxLength=3`},
		"default too few items":   {`f: '[]string | default=["a"] minItems=2'`, `default=["a"] has fewer items than minItems=2`},
		"default not in enum":     {`f: string | enum="a,b" default=c`, `default="c" is not one of enum`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := convert(t, tt.spec, "")
			require.ErrorIs(t, err, simpleschema.ErrInvalidMarker)
			assert.Contains(t, err.Error(), "f: invalid marker: "+tt.want)
		})
	}
}

// Bounds that leave room, enum values and defaults inside them are
// accepted: nothing is refused that can work.
func TestConsistentMarkersAreAccepted(t *testing.T) {
	for _, spec := range []string{
		`f: integer | minimum=1 maximum=1`,
		`f: integer | minimum=0.5 maximum=1.5`,
		`f: float | minimum=1.2 maximum=1.8`,
		`f: string | minLength=2 maxLength=2 enum="ab,cd" default=ab pattern="^[a-z]+$"`,
		`f: '[]string | minItems=1 maxItems=1 default=["a"]'`,
		`f: integer | enum="1,2,3" minimum=1 maximum=3 default=2`,
		`f: T | minimum=2`,
	} {
		t.Run(spec, func(t *testing.T) {
			_, err := convert(t, spec, "T: integer | maximum=5")
			assert.NoError(t, err)
		})
	}
	var s, types map[string]any
	require.NoError(t, yaml.Unmarshal([]byte("f: T | minimum=9"), &s))
	require.NoError(t, yaml.Unmarshal([]byte("T: integer | maximum=5"), &types))
	res, err := simpleschema.Convert("", s, types)
	require.NoError(t, err)
	require.Len(t, res.Warnings, 1)
	assert.Contains(t, res.Warnings[0].Message, "minimum=9 is greater than maximum=5", "bounds from a custom type and the field combine")
}

// As in kro, listMapKey repeats to name several keys.
func TestRepeatedListMapKey(t *testing.T) {
	out, err := convert(t, `ports: "[]Port | listType=map listMapKey=name listMapKey=port"`,
		"Port:\n  name: string | required=true\n  port: integer | required=true")
	require.NoError(t, err)
	assert.Equal(t, []any{"name", "port"}, out["properties"].(map[string]any)["ports"].(map[string]any)["x-kubernetes-list-map-keys"])
}

// A custom type declared as a string with required=true makes every field
// of that type required, as in kro.
func TestRequiredCustomTypeIsKept(t *testing.T) {
	out, err := convert(t, "a: Name\nb: Name | description=x\nc: \"[]Name\"", "Name: string | required=true")
	require.NoError(t, err)
	assert.Equal(t, []any{"a", "b"}, out["required"])
}

func TestExtensionsAreListed(t *testing.T) {
	obj := map[string]any{
		"n":     "number",
		"list":  []any{"string"},
		"e":     `float | enum="1.5,2"`,
		"ports": `[]P | listType=map listMapKey="a,b"`,
		"plain": "string | default=x",
	}
	types := map[string]any{"P": map[string]any{"a": "string | required=true", "b": "string | required=true"}}
	res, err := simpleschema.Convert("", obj, types)
	require.NoError(t, err)
	exts := res.Extensions
	assert.Equal(t, []simpleschema.Extension{
		{Path: "e", Feature: "enum on a float field"},
		{Path: "list", Feature: "YAML list as a type"},
		{Path: "n", Feature: "number type (kro spells it float)"},
		{Path: "ports", Feature: "comma-separated listMapKey"},
	}, exts)
}
