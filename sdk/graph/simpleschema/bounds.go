package simpleschema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// contradictions says which markers contradict each other, so that no
// value could ever be valid or a listed value could never be accepted: a
// lower bound above its upper bound (minimum, minLength, minItems,
// minProperties), bounds that leave no integer, an enum value the field's
// own bounds or pattern refuse. kro v0.9.4 and the API server accept them
// and serve a field nothing can be written to (an instance that leaves it
// out works), so they are warnings, each naming both markers, e.g.
//
//	minimum=10 is greater than maximum=1: no value can satisfy both
//
// "" when nothing contradicts.
func contradictions(s *apiextensionsv1.JSONSchemaProps) string {
	if err := checkRanges(s); err != nil {
		return err.Error()
	}
	if len(s.Enum) == 0 {
		return ""
	}
	v, err := newValueCheck(s)
	if err != nil {
		return "" // applyPattern has checked the pattern already
	}
	for _, e := range s.Enum {
		if why := v.refuses(e.Raw); why != "" {
			return fmt.Sprintf("enum value %s %s: it can never be accepted", e.Raw, why)
		}
	}
	return ""
}

// checkDefault refuses a default outside the field's bounds, pattern or
// enum: the API server refuses such a CRD when it is applied, so kro's
// RGD fails there too.
func checkDefault(s *apiextensionsv1.JSONSchemaProps) error {
	if s.Default == nil {
		return nil
	}
	v, err := newValueCheck(s)
	if err != nil {
		return nil //nolint:nilerr // applyPattern has checked the pattern already
	}
	if why := v.refuses(s.Default.Raw); why != "" {
		return fmt.Errorf("%w: default=%s %s", ErrInvalidMarker, s.Default.Raw, why)
	}
	if len(s.Enum) > 0 && !inEnum(s.Enum, s.Default.Raw) {
		return fmt.Errorf("%w: default=%s is not one of enum", ErrInvalidMarker, s.Default.Raw)
	}
	return nil
}

// checkRanges refuses pairs of bounds that leave nothing.
func checkRanges(s *apiextensionsv1.JSONSchemaProps) error {
	if s.Minimum != nil && s.Maximum != nil {
		lo, hi := *s.Minimum, *s.Maximum
		switch {
		case lo > hi:
			return fmt.Errorf("minimum=%s is greater than maximum=%s: no value can satisfy both", num(lo), num(hi))
		case lo == hi && (s.ExclusiveMinimum || s.ExclusiveMaximum):
			return fmt.Errorf("minimum=%s and maximum=%s with an exclusive bound leave no value", num(lo), num(hi))
		case s.Type == "integer" && math.Ceil(lo) > math.Floor(hi):
			return fmt.Errorf("minimum=%s and maximum=%s leave no integer", num(lo), num(hi))
		}
	}
	for _, p := range []struct {
		lo, hi         *int64
		loName, hiName string
		what           string
	}{
		{s.MinLength, s.MaxLength, "minLength", "maxLength", "string"},
		{s.MinItems, s.MaxItems, "minItems", "maxItems", "list"},
		{s.MinProperties, s.MaxProperties, "minProperties", "maxProperties", "object"},
	} {
		if p.lo != nil && p.hi != nil && *p.lo > *p.hi {
			return fmt.Errorf("%s=%d is greater than %s=%d: no %s can satisfy both", p.loName, *p.lo, p.hiName, *p.hi, p.what)
		}
	}
	return nil
}

// valueCheck tests one JSON value (an enum value or the default) against
// the field's bounds, length and pattern.
type valueCheck struct {
	s       *apiextensionsv1.JSONSchemaProps
	pattern *regexp.Regexp
}

func newValueCheck(s *apiextensionsv1.JSONSchemaProps) (*valueCheck, error) {
	v := &valueCheck{s: s}
	if s.Pattern == "" {
		return v, nil
	}
	var err error
	v.pattern, err = regexp.Compile(s.Pattern)
	return v, err
}

// refuses says why the field refuses raw ("is less than minimum=1"), or ""
// when it accepts it. Values of another type are left to the default
// marker's own checks.
func (v *valueCheck) refuses(raw []byte) string {
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return ""
	}
	s := v.s
	switch x := x.(type) {
	case float64:
		if s.Minimum != nil && (x < *s.Minimum || s.ExclusiveMinimum && x == *s.Minimum) {
			return "is less than minimum=" + num(*s.Minimum)
		}
		if s.Maximum != nil && (x > *s.Maximum || s.ExclusiveMaximum && x == *s.Maximum) {
			return "is greater than maximum=" + num(*s.Maximum)
		}
	case string:
		n := int64(utf8.RuneCountInString(x))
		if s.MinLength != nil && n < *s.MinLength {
			return fmt.Sprintf("is shorter than minLength=%d", *s.MinLength)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			return fmt.Sprintf("is longer than maxLength=%d", *s.MaxLength)
		}
		if v.pattern != nil && !v.pattern.MatchString(x) {
			return fmt.Sprintf("does not match pattern=%q", s.Pattern)
		}
	case []any:
		if s.MinItems != nil && int64(len(x)) < *s.MinItems {
			return fmt.Sprintf("has fewer items than minItems=%d", *s.MinItems)
		}
		if s.MaxItems != nil && int64(len(x)) > *s.MaxItems {
			return fmt.Sprintf("has more items than maxItems=%d", *s.MaxItems)
		}
	}
	return ""
}

func inEnum(enum []apiextensionsv1.JSON, raw []byte) bool {
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		return true
	}
	for _, e := range enum {
		var got any
		if json.Unmarshal(e.Raw, &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
