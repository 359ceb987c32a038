package simpleschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// markerFunc applies one marker to s. It returns a *markerWarning when it
// applied the marker as kro does although it constrains nothing.
type markerFunc func(s *apiextensionsv1.JSONSchemaProps, value string) error

// markerWarning is a marker applied as kro applies it that constrains
// nothing: reported as a Warning, not refused.
type markerWarning struct{ msg string }

func (w *markerWarning) Error() string { return w.msg }

var markerFuncs = map[string]markerFunc{
	"default":     applyDefault,
	"description": func(s *apiextensionsv1.JSONSchemaProps, v string) error { s.Description = v; return nil },
	"minimum":     numberBound(func(s *apiextensionsv1.JSONSchemaProps, f float64) { s.Minimum = &f }),
	"maximum":     numberBound(func(s *apiextensionsv1.JSONSchemaProps, f float64) { s.Maximum = &f }),
	"enum":        applyEnum,
	"pattern":     applyPattern,
	"minLength":   count("string", func(s *apiextensionsv1.JSONSchemaProps, n int64) { s.MinLength = &n }),
	"maxLength":   count("string", func(s *apiextensionsv1.JSONSchemaProps, n int64) { s.MaxLength = &n }),
	"minItems":    count("array", func(s *apiextensionsv1.JSONSchemaProps, n int64) { s.MinItems = &n }),
	"maxItems":    count("array", func(s *apiextensionsv1.JSONSchemaProps, n int64) { s.MaxItems = &n }),
	"uniqueItems": applyUniqueItems,
	"listType":    applyListType,
	"listMapKey":  applyListMapKey,
	"immutable":   applyImmutable,
	"validation":  applyValidation,
}

// Markers lists the marker names SimpleSchema understands, sorted.
func Markers() []string {
	names := []string{"required"}
	for n := range markerFuncs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// applyMarkers applies markers to s, in order, and reports whether the
// field is required. As in kro, a marker may repeat: validation and
// listMapKey accumulate, required=true anywhere makes the field required,
// and for the others the last one wins. ext is told about each use of
// syntax kro does not accept, warn about each marker kro accepts that
// constrains nothing or that no value can satisfy.
func applyMarkers(s *apiextensionsv1.JSONSchemaProps, markers []Marker, ext, warn func(string)) (bool, error) {
	required := false
	for _, m := range markers {
		if m.Name == "required" {
			b, err := parseBool(m)
			if err != nil {
				return false, err
			}
			required = required || b
			continue
		}
		noteMarkerExtension(s, m, ext)
		apply, ok := markerFuncs[m.Name]
		if !ok {
			return false, fmt.Errorf("%w %q (known: %s)", ErrUnknownMarker, m.Name, strings.Join(Markers(), ", "))
		}
		if err := apply(s, m.Value); err != nil {
			var w *markerWarning
			if errors.As(err, &w) {
				warn(fmt.Sprintf("%s=%q: %s", m.Name, m.Value, w.msg))
				continue
			}
			return false, fmt.Errorf("%w: %s=%q: %w", ErrInvalidMarker, m.Name, m.Value, err)
		}
	}
	if msg := contradictions(s); msg != "" {
		warn(msg)
	}
	if err := checkDefault(s); err != nil {
		return false, err
	}
	return required, checkListMap(s)
}

// noteMarkerExtension reports marker uses kro v0.9.4 rejects or reads
// differently: an enum on a float field, several keys in one listMapKey.
func noteMarkerExtension(s *apiextensionsv1.JSONSchemaProps, m Marker, ext func(string)) {
	switch {
	case m.Name == "enum" && s.Type == "number":
		ext("enum on a float field")
	case m.Name == "listMapKey" && strings.Contains(m.Value, ","):
		ext("comma-separated listMapKey")
	}
}

func parseBool(m Marker) (bool, error) {
	b, err := strconv.ParseBool(m.Value)
	if err != nil {
		return false, fmt.Errorf("%w: %s=%q: want true or false", ErrInvalidMarker, m.Name, m.Value)
	}
	return b, nil
}

func applyDefault(s *apiextensionsv1.JSONSchemaProps, v string) error {
	raw, err := literal(s.Type, v)
	if err != nil {
		return err
	}
	s.Default = &apiextensionsv1.JSON{Raw: raw}
	return nil
}

// literal encodes v as a JSON value of the OpenAPI type t.
func literal(t, v string) ([]byte, error) {
	switch t {
	case "string":
		return json.Marshal(v)
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not an integer")
		}
		return json.Marshal(n)
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("not a number")
		}
		return json.Marshal(f)
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("not a boolean")
		}
		return json.Marshal(b)
	}
	var x any
	if err := json.Unmarshal([]byte(v), &x); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, isList := x.([]any); isList != (t == "array") {
		return nil, fmt.Errorf("not a JSON %s", map[bool]string{true: "array", false: "object"}[t == "array"])
	}
	return json.Marshal(x)
}

// numberBound sets minimum or maximum. As in kro, it is set on a field
// of any type; on a field that is not a number it constrains nothing.
func numberBound(set func(*apiextensionsv1.JSONSchemaProps, float64)) markerFunc {
	return func(s *apiextensionsv1.JSONSchemaProps, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		set(s, f)
		if s.Type != "integer" && s.Type != "number" {
			return &markerWarning{fmt.Sprintf("constrains only integer and float fields, not %s: it has no effect", s.Type)}
		}
		return nil
	}
}

func count(typ string, set func(*apiextensionsv1.JSONSchemaProps, int64)) markerFunc {
	return func(s *apiextensionsv1.JSONSchemaProps, v string) error {
		if s.Type != typ {
			return fmt.Errorf("only for %s fields, not %s", typ, s.Type)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		set(s, n)
		if n < 0 {
			return &markerWarning{"a negative bound: it has no effect"}
		}
		return nil
	}
}

func applyEnum(s *apiextensionsv1.JSONSchemaProps, v string) error {
	if s.Type != "string" && s.Type != "integer" && s.Type != "number" {
		return fmt.Errorf("only for string, integer and float fields, not %s", s.Type)
	}
	s.Enum = nil
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return fmt.Errorf("empty value in the list")
		}
		raw, err := literal(s.Type, item)
		if err != nil {
			return fmt.Errorf("%q: %w", item, err)
		}
		s.Enum = append(s.Enum, apiextensionsv1.JSON{Raw: raw})
	}
	return nil
}

func applyPattern(s *apiextensionsv1.JSONSchemaProps, v string) error {
	if s.Type != "string" {
		return fmt.Errorf("only for string fields, not %s", s.Type)
	}
	if v == "" {
		return fmt.Errorf("empty pattern")
	}
	if _, err := regexp.Compile(v); err != nil {
		return err
	}
	s.Pattern = v
	return nil
}

func applyUniqueItems(s *apiextensionsv1.JSONSchemaProps, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	if !b {
		return nil
	}
	// CRDs forbid uniqueItems; a set list is the Kubernetes way to say it.
	return applyListType(s, "set")
}

func applyListType(s *apiextensionsv1.JSONSchemaProps, v string) error {
	if s.Type != "array" {
		return fmt.Errorf("only for array fields, not %s", s.Type)
	}
	if s.XListType != nil && *s.XListType != v {
		return fmt.Errorf("conflicts with list type %q", *s.XListType)
	}
	items := s.Items.Schema
	switch v {
	case "atomic":
	case "set":
		if items.Type == "object" || items.Type == "array" {
			return fmt.Errorf("a set needs scalar items, not %s", items.Type)
		}
	case "map":
		if items.Type != "object" || len(items.Properties) == 0 {
			return fmt.Errorf("a map list needs object items with properties")
		}
	default:
		return fmt.Errorf("want atomic, set or map")
	}
	s.XListType = &v
	return nil
}

func applyListMapKey(s *apiextensionsv1.JSONSchemaProps, v string) error {
	if s.Type != "array" {
		return fmt.Errorf("only for array fields, not %s", s.Type)
	}
	for key := range strings.SplitSeq(v, ",") {
		key = strings.TrimSpace(key)
		if key == "" {
			return fmt.Errorf("empty key")
		}
		if slices.Contains(s.XListMapKeys, key) {
			return fmt.Errorf("duplicate key %q", key)
		}
		s.XListMapKeys = append(s.XListMapKeys, key)
	}
	return nil
}

// checkListMap checks the listType=map and listMapKey markers together,
// whichever order they came in.
func checkListMap(s *apiextensionsv1.JSONSchemaProps) error {
	isMap := s.XListType != nil && *s.XListType == "map"
	if !isMap && len(s.XListMapKeys) == 0 {
		return nil
	}
	if !isMap {
		return fmt.Errorf("%w: listMapKey needs listType=map", ErrInvalidMarker)
	}
	if len(s.XListMapKeys) == 0 {
		return fmt.Errorf("%w: listType=map needs listMapKey", ErrInvalidMarker)
	}
	items := s.Items.Schema
	for _, key := range s.XListMapKeys {
		prop, ok := items.Properties[key]
		if !ok {
			return fmt.Errorf("%w: listMapKey %q is not a field of the items", ErrInvalidMarker, key)
		}
		if !slices.Contains(items.Required, key) && prop.Default == nil {
			return fmt.Errorf("%w: listMapKey %q must be required or have a default", ErrInvalidMarker, key)
		}
	}
	return nil
}

func applyImmutable(s *apiextensionsv1.JSONSchemaProps, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	if b {
		s.XValidations = append(s.XValidations, apiextensionsv1.ValidationRule{Rule: "self == oldSelf", Message: "field is immutable"})
	}
	return nil
}

func applyValidation(s *apiextensionsv1.JSONSchemaProps, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("empty rule")
	}
	// kro's message, word for word: it is what users see when the rule fails.
	s.XValidations = append(s.XValidations, apiextensionsv1.ValidationRule{Rule: v, Message: "validation failed"})
	return nil
}
