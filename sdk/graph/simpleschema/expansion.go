package simpleschema

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ErrTooLarge is wrapped (by a *BoundError) when a schema would expand
// past one of its Bounds.
var ErrTooLarge = errors.New("schema too large")

// Defaults of Bounds; see the field of the same name.
const (
	DefaultMaxProperties = 10_000
	DefaultMaxBytes      = 1 << 20
	// DefaultMaxDepth keeps a schema well inside what an API server
	// decodes: it refuses JSON nested more than 10,000 levels, and each
	// level of a schema takes up to two.
	DefaultMaxDepth = 1_000
)

// Bounds limit what a SimpleSchema may expand to. Custom types are
// expanded at every use, so a type made of two copies of the previous one
// doubles at each level: a few lines can ask for more than any memory. The
// bounds are checked while expanding, before anything is copied, and a
// schema past one is refused with a *BoundError.
//
// A zero field means its default.
type Bounds struct {
	// MaxProperties is the most object fields the schema may have, at every
	// depth, custom types counted at every use. Each custom type is held to
	// it on its own too, used or not. Defaults to DefaultMaxProperties.
	MaxProperties int
	// MaxBytes bounds the schema's size as JSON, counted from below: the
	// type, descriptions, defaults, enums, patterns and rules of every
	// node, and every field name. Defaults to DefaultMaxBytes.
	MaxBytes int
	// MaxDepth is the most objects, arrays and maps nested in one another.
	// Defaults to DefaultMaxDepth.
	MaxDepth int
}

func (b Bounds) withDefaults() Bounds {
	if b.MaxProperties <= 0 {
		b.MaxProperties = DefaultMaxProperties
	}
	if b.MaxBytes <= 0 {
		b.MaxBytes = DefaultMaxBytes
	}
	if b.MaxDepth <= 0 {
		b.MaxDepth = DefaultMaxDepth
	}
	return b
}

// BoundError says that a schema would expand past one of its Bounds. It is
// found where the bound was passed: counting stops there, so Size is a
// lower bound of what the whole schema would take.
type BoundError struct {
	// Bound is "properties", "bytes" or "depth".
	Bound string
	// Limit is the bound's value, and Size the count that passed it.
	Limit, Size int
	// Type is the custom type whose use passed the bound; empty when none.
	Type string
}

func (e *BoundError) Error() string {
	what := map[string]string{"properties": "properties", "bytes": "bytes of JSON", "depth": "levels deep"}[e.Bound]
	if e.Type != "" {
		return fmt.Sprintf("%v: using type %s here makes the schema at least %d %s, over the limit of %d", ErrTooLarge, e.Type, e.Size, what, e.Limit)
	}
	return fmt.Sprintf("%v: the schema is at least %d %s here, over the limit of %d", ErrTooLarge, e.Size, what, e.Limit)
}

func (e *BoundError) Unwrap() error { return ErrTooLarge }

// size is what a schema (or a part of one) expands to.
type size struct {
	props, bytes int
	// depth is how deeply objects, arrays and maps nest in it.
	depth int
	// over is set once a bound was passed: nothing more is counted.
	over bool
}

// enter goes one level deeper at p, if the depth bound allows it.
func (c *converter) enter(p *path) bool {
	if c.size.over {
		return false
	}
	if c.level+1 > c.bounds.MaxDepth {
		c.bound(p, "", "depth", c.bounds.MaxDepth, c.level+1)
		return false
	}
	c.level++
	c.size.depth = max(c.size.depth, c.level)
	return true
}

func (c *converter) leave() { c.level-- }

// grow counts what the node at p adds (of custom type typ, if named), and
// reports whether the schema is still within its bounds.
func (c *converter) grow(p *path, typ string, by size) bool {
	if c.size.over {
		return false
	}
	c.size.props += by.props
	c.size.bytes += by.bytes
	switch {
	case c.size.props > c.bounds.MaxProperties:
		c.bound(p, typ, "properties", c.bounds.MaxProperties, c.size.props)
	case c.size.bytes > c.bounds.MaxBytes:
		c.bound(p, typ, "bytes", c.bounds.MaxBytes, c.size.bytes)
	default:
		return true
	}
	return false
}

func (c *converter) bound(p *path, typ, bound string, limit, n int) {
	c.size.over = true
	c.fail(p, &BoundError{Bound: bound, Limit: limit, Size: n, Type: typ})
}

// ownBytes is how many bytes of JSON s takes without its children, or
// somewhat less (escapes and punctuation are not all counted).
func ownBytes(s *apiextensionsv1.JSONSchemaProps) int {
	n := len(`{"type":""}`) + len(s.Type) + len(s.Description) + len(s.Pattern) + len(s.Format)
	if s.Default != nil {
		n += len(s.Default.Raw)
	}
	for _, e := range s.Enum {
		n += len(e.Raw) + 1
	}
	for _, v := range s.XValidations {
		n += len(v.Rule) + len(v.Message) + len(v.MessageExpression)
	}
	for _, k := range s.XListMapKeys {
		n += len(k) + 3
	}
	return n
}

// shallowCopy is a use of a custom type's schema: its own fields may be
// changed (markers), its children are shared with the type.
func shallowCopy(def *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	s := *def
	s.Required = slices.Clip(s.Required)
	s.Enum = slices.Clip(s.Enum)
	s.XValidations = slices.Clip(s.XValidations)
	s.XListMapKeys = slices.Clip(s.XListMapKeys)
	return &s
}

// path is where a node is in the SimpleSchema tree. It is built lazily, as
// a chain of parents, and spelled out only for errors and extensions:
// spelling every node's path would cost the square of the depth.
type path struct {
	parent *path
	// elem is the key (".key"), "[]" for items, or the root's name.
	elem string
}

func pathOf(root string) *path { return &path{elem: root} }

func (p *path) key(k string) *path { return &path{parent: p, elem: k} }

func (p *path) items() *path { return &path{parent: p, elem: "[]"} }

// maxPathLen bounds a spelled-out path; longer ones keep their start and
// end around "…".
const maxPathLen = 256

func (p *path) String() string {
	var elems []string
	for q := p; q != nil; q = q.parent {
		elems = append(elems, q.elem)
	}
	var b strings.Builder
	for i := len(elems) - 1; i >= 0; i-- {
		e := elems[i]
		if e != "[]" && b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e)
	}
	s := b.String()
	if len(s) <= maxPathLen {
		return s
	}
	return strings.ToValidUTF8(s[:maxPathLen/2-1]+"…"+s[len(s)-maxPathLen/2+2:], "")
}
