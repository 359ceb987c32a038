package graph

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Compile and evaluation errors are *Error values whose Err
// wraps one of these; match them with errors.Is.
var (
	// ErrInvalid marks a ResourceGraphDefinition that breaks a structural
	// rule: a bad id, a missing template field, both template and
	// externalRef, a bad kind or version...
	ErrInvalid = errors.New("invalid resource graph definition")
	// ErrSchema marks a SimpleSchema error in spec.schema.spec or types.
	ErrSchema = errors.New("invalid schema")
	// ErrExpression marks a CEL expression that does not parse or
	// type-check, or a ${} that is malformed.
	ErrExpression = errors.New("invalid expression")
	// ErrType marks an expression whose result type does not fit where it is
	// used (a string where an integer is expected, a non-boolean readyWhen...).
	ErrType = errors.New("type mismatch")
	// ErrReference marks an expression that references something it may not
	// see there (another resource in readyWhen, a resource in its own
	// template...).
	ErrReference = errors.New("invalid reference")
	// ErrCycle marks a dependency cycle between resources.
	ErrCycle = errors.New("dependency cycle")
	// ErrSchemaNotFound is returned (wrapped) by a SchemaResolver that does
	// not know a kind.
	ErrSchemaNotFound = errors.New("schema not found")
	// ErrSchemaUnavailable marks a compile that could not ask its
	// SchemaResolver (the API server did not answer). It says nothing about
	// the RGD: compile again later.
	ErrSchemaUnavailable = errors.New("schema unavailable")
	// ErrEvaluation marks a CEL runtime error during evaluation.
	ErrEvaluation = errors.New("evaluation failed")
	// ErrTooManyIterations is returned (wrapped) by Node.Iterations when
	// forEach expands past MaxIterations combinations.
	ErrTooManyIterations = errors.New("too many forEach iterations")
	// ErrBreakingChange is returned (wrapped) by CheckCompatible.
	ErrBreakingChange = errors.New("breaking schema change")
)

// Error points at the part of a ResourceGraphDefinition that is wrong: the
// resource, the field path and the expression, all optional. It reads as one
// line, for example:
//
//	resource "deployment": spec.replicas: ${schema.spec.replicaz}: undefined field 'replicaz'
type Error struct {
	// ResourceID is the id of the resource concerned; empty for errors in
	// spec.schema.
	ResourceID string
	// Path is the field path: inside the resource's template for template
	// fields ("spec.replicas"), otherwise from the resource entry
	// ("readyWhen[0]", "forEach[0].region") or from the RGD
	// ("spec.schema.spec.port").
	Path string
	// Expression is the text as written in the RGD, ${} included.
	Expression string
	// Err is the cause; it wraps one of the sentinel errors of this package.
	Err error

	// maxExpression is how many characters of Expression the message
	// quotes; 0 means DefaultMaxMessageExpression.
	maxExpression int
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.ResourceID != "" {
		fmt.Fprintf(&b, "resource %q: ", e.ResourceID)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	if e.Expression != "" {
		limit := e.maxExpression
		if limit <= 0 {
			limit = DefaultMaxMessageExpression
		}
		b.WriteString(truncate(e.Expression, limit) + ": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// kindError carries a sentinel for errors.Is without repeating its text, so
// that messages stay short.
type kindError struct {
	kind    error
	msg     string
	wrapped error
}

func (e *kindError) Error() string { return e.msg }

func (e *kindError) Unwrap() []error {
	if e.wrapped != nil {
		return []error{e.kind, e.wrapped}
	}
	return []error{e.kind}
}

// errorf returns an error that matches kind and reads as the formatted
// message. A %w in format is honoured too.
func errorf(kind error, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if u := errors.Unwrap(err); u != nil {
		return &kindError{kind: kind, msg: err.Error(), wrapped: u}
	}
	return &kindError{kind: kind, msg: err.Error()}
}

// limitErrorf is errorf for an error that a bound of Limits causes: it
// matches kind and ErrLimit (and cause, when not nil), and reads as the
// formatted message.
func limitErrorf(kind, cause error, format string, args ...any) error {
	wrapped := ErrLimit
	if cause != nil {
		wrapped = errors.Join(ErrLimit, cause)
	}
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...), wrapped: wrapped}
}

// truncate cuts s to at most n characters, marking a cut with "…". An
// expression or value quoted in a message (a condition, an event, a log
// line) goes through it, so that a 100k-character expression does not
// travel whole into every status write.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + "…"
		}
		count++
	}
	return s
}
