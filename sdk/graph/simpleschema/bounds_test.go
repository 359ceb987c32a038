package simpleschema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Bounds SimpleSchema has no marker for (exclusive bounds, property
// counts) are checked too, should a schema carry them.
func TestRangesWithoutMarkersOfTheirOwn(t *testing.T) {
	one, two := int64(1), int64(2)
	f := func(v float64) *float64 { return &v }
	assert.ErrorContains(t, checkRanges(&apiextensionsv1.JSONSchemaProps{Type: "object", MinProperties: &two, MaxProperties: &one}),
		"minProperties=2 is greater than maxProperties=1: no object can satisfy both")
	assert.ErrorContains(t, checkRanges(&apiextensionsv1.JSONSchemaProps{Type: "number", Minimum: f(1), Maximum: f(1), ExclusiveMaximum: true}),
		"minimum=1 and maximum=1 with an exclusive bound leave no value")
	assert.NoError(t, checkRanges(&apiextensionsv1.JSONSchemaProps{Type: "number", Minimum: f(1), Maximum: f(1)}))
	assert.Empty(t, (&valueCheck{s: &apiextensionsv1.JSONSchemaProps{Minimum: f(1), ExclusiveMinimum: true}}).refuses([]byte("2")))
	assert.Equal(t, "is less than minimum=1", (&valueCheck{s: &apiextensionsv1.JSONSchemaProps{Minimum: f(1), ExclusiveMinimum: true}}).refuses([]byte("1")))
}
