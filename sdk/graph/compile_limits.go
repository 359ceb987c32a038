package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/fleetgraph/fleetgraph/sdk/graph/simpleschema"
)

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

// checkCRDSize refuses a generated CRD larger than Limits.MaxCRDBytes as
// JSON: every spoke would refuse it at fan-out (etcd keeps at most 1.5 MiB
// per object). It runs before the CRD is validated, which costs more the
// larger the CRD, and returns the JSON for checkCRD.
func (c *compiler) checkCRDSize(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, bool) {
	raw, err := json.Marshal(crd)
	if err != nil {
		c.fail(&Error{Path: "spec.schema", Err: errorf(ErrSchema, "generated CRD: %v", err)})
		return nil, false
	}
	limit := c.opts.Limits.MaxCRDBytes
	if len(raw) <= limit {
		return raw, true
	}
	c.fail(&Error{Path: "spec.schema", Err: limitErrorf(ErrSchema, nil,
		"the generated CRD is %d bytes of JSON, over the limit of %d (Limits.MaxCRDBytes); %s",
		len(raw), limit, crdParts(crd))})
	return nil, false
}

// crdParts says what takes the room in a CRD, largest first.
func crdParts(crd *apiextensionsv1.CustomResourceDefinition) string {
	v := crd.Spec.Versions[0]
	root := v.Schema.OpenAPIV3Schema
	parts := []struct {
		name string
		v    any
	}{
		{"spec schema", root.Properties["spec"]},
		{"status schema", root.Properties["status"]},
		{"printer columns", v.AdditionalPrinterColumns},
		{"labels and annotations", []any{crd.Labels, crd.Annotations}},
	}
	type part struct {
		name string
		n    int
	}
	sizes := make([]part, 0, len(parts))
	for _, p := range parts {
		raw, _ := json.Marshal(p.v)
		sizes = append(sizes, part{p.name, len(raw)})
	}
	slices.SortStableFunc(sizes, func(a, b part) int { return b.n - a.n })
	out := make([]string, len(sizes))
	for i, p := range sizes {
		out[i] = fmt.Sprintf("%s %d", p.name, p.n)
	}
	return "bytes by part: " + strings.Join(out, ", ")
}

// statusBudget counts the properties of the status schema as it is
// inferred from expression types: projecting a large object many times
// would multiply it, so the instance schema as a whole (spec and status)
// is held to Limits.MaxSchemaProperties.
type statusBudget struct {
	specProps, used int
	// where is the status field being inferred, and expr its expression,
	// for the error.
	where, expr string
	exhausted   bool
}

// takeStatusProperties counts n more status properties at where, and
// reports whether the schema is still within the limit (once it is not,
// the error is reported, once, and the rest is left free-form).
func (c *compiler) takeStatusProperties(where string, n int) bool {
	b := &c.status
	if b.exhausted {
		return false
	}
	b.used += n
	limit := c.opts.Limits.MaxSchemaProperties
	if b.specProps+b.used <= limit {
		return true
	}
	b.exhausted = true
	c.fail(&Error{Path: where, Expression: c.status.expr, Err: limitErrorf(ErrSchema, nil,
		"the status schema makes the instance schema at least %d properties (%d in spec), over the limit of %d (Limits.MaxSchemaProperties)",
		b.specProps+b.used, b.specProps, limit)})
	return false
}

// statusDepthFits refuses status fields nested deeper than a CRD's schema
// may be.
func (c *compiler) statusDepthFits(where string, depth int) bool {
	if depth < simpleschema.DefaultMaxDepth {
		return true
	}
	c.fail(&Error{Path: where, Err: limitErrorf(ErrSchema, nil, "status fields nest more than %d levels deep (a CRD's schema cannot nest deeper)", simpleschema.DefaultMaxDepth)})
	return false
}

// countProperties counts the object fields of s at every depth.
func countProperties(s *apiextensionsv1.JSONSchemaProps) int {
	if s == nil {
		return 0
	}
	n := len(s.Properties)
	for _, p := range s.Properties {
		n += countProperties(&p)
	}
	if s.Items != nil {
		n += countProperties(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		n += countProperties(s.AdditionalProperties.Schema)
	}
	return n
}

// maxPathLen bounds a field path in an error; longer ones keep their start
// and end around "…". Paths are built level by level, so without a bound
// a deep tree of long keys would cost the square of its depth.
const maxPathLen = 256

func clipPath(p string) string {
	if len(p) <= maxPathLen {
		return p
	}
	return strings.ToValidUTF8(p[:maxPathLen/2-1]+"…"+p[len(p)-maxPathLen/2+2:], "")
}

// cutText returns s cut to at most n characters, marked with "…" when cut.
func cutText(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos] + "…"
		}
		i++
	}
	return s
}

// stopped returns an error once the compile's context is done.
func (c *compiler) stopped() error {
	if c.ctx.Err() == nil {
		return nil
	}
	if cause := context.Cause(c.ctx); cause != c.ctx.Err() {
		return fmt.Errorf("compiling %q stopped: %w: %w", c.rgd.Name, c.ctx.Err(), cause)
	}
	return fmt.Errorf("compiling %q stopped: %w", c.rgd.Name, c.ctx.Err())
}
