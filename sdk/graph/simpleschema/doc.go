// Package simpleschema turns kro's SimpleSchema into OpenAPI v3.
//
// SimpleSchema describes an instance spec as a YAML tree whose leaves are
// strings of the form
//
//	type | marker=value marker="quoted value" ...
//
// A nested map is an object; types are string, integer, boolean, float (or
// number), object (free-form), []T, map[string]T and the names of custom
// types declared beside the spec. Markers add OpenAPI constraints: required,
// default, description, minimum, maximum, enum, pattern, minLength,
// maxLength, minItems, maxItems, uniqueItems, listType, listMapKey,
// immutable and validation (a CEL rule).
//
// The syntax follows kro's so that an RGD written for kro means the same
// here. Errors name the offending field by its dotted path.
//
// Custom types are expanded at every use, so a few lines can describe a
// schema larger than any memory (a type made of two copies of the previous
// one doubles at each level). Conversion counts what the schema expands to
// as it goes, sharing each type's schema among its uses until the end, and
// refuses one past its Bounds (properties, bytes, depth) with a
// *BoundError before anything is copied.
package simpleschema
