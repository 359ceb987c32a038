// Package expr finds the ${...} CEL expressions embedded in the strings of a
// ResourceGraphDefinition (templates, status projections, readyWhen,
// includeWhen, forEach).
//
// It only splits text: it knows enough of CEL's lexical rules (string
// literals with their quotes and escapes, nested braces of map literals) to
// find where each expression ends, and nothing about what the expression
// means. Parsing and type-checking are the graph package's job.
package expr
