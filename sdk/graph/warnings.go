package graph

import (
	"fmt"
	"sort"
)

// Warning is something in a compiled RGD that fleetgraph serves, as kro
// does, but that is likely to cost more or do other than its author meant:
// an expression whose worst case is very expensive (it reads lists with no
// maxItems), two resources that render one object. A warning never refuses
// an RGD; it says where to look. `fleetgraph validate` prints them.
type Warning struct {
	// ResourceID is the resource concerned; empty for spec.schema.
	ResourceID string
	// Path locates it like Error.Path.
	Path string
	// Expression is the expression concerned as written, ${} included,
	// cut to Limits.MaxMessageExpression characters; empty when the
	// warning is about no one expression.
	Expression string
	// Message says what is wrong and what would fix it.
	Message string
}

func (w Warning) String() string {
	where := w.Path
	if w.ResourceID != "" {
		where = fmt.Sprintf("resource %q: %s", w.ResourceID, w.Path)
	}
	if w.Expression != "" {
		return fmt.Sprintf("%s: %s: %s", where, w.Expression, w.Message)
	}
	return where + ": " + w.Message
}

// warn records w; its expression is cut like an error's.
func (d *diagnostics) warn(w Warning) {
	w.Expression = truncate(w.Expression, d.maxExpression)
	d.warns = append(d.warns, w)
}

// warnings returns what was recorded, sorted and without repeats.
func (d *diagnostics) warnings() []Warning {
	sort.SliceStable(d.warns, func(i, j int) bool { return d.warns[i].String() < d.warns[j].String() })
	var out []Warning
	for i, w := range d.warns {
		if i == 0 || w != d.warns[i-1] {
			out = append(out, w)
		}
	}
	return out
}
