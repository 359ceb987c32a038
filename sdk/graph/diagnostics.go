package graph

import (
	"errors"
	"sort"

	apiservercel "k8s.io/apiserver/pkg/cel"
)

// diagnostics collects what one Compile call finds wrong, the extensions
// it uses and the warnings it has, in the order found. Every phase of a compile records
// into the same diagnostics; it is the only state they all share.
type diagnostics struct {
	// strict turns every extension into an error (Options.Strict).
	strict bool
	// maxExpression is how many characters of an *Error's expression
	// are kept (Limits.MaxMessageExpression).
	maxExpression int
	errs          []error
	exts          []Extension
	warns         []Warning
}

func newDiagnostics(opts Options) *diagnostics {
	return &diagnostics{strict: opts.Strict, maxExpression: opts.Limits.MaxMessageExpression}
}

// fail records err; the expression of an *Error is cut to
// Limits.MaxMessageExpression characters, since it goes into conditions,
// events and logs.
func (d *diagnostics) fail(err error) {
	if e, ok := err.(*Error); ok {
		e.Expression = truncate(e.Expression, d.maxExpression)
	}
	d.errs = append(d.errs, err)
}

// sound returns the resources no error recorded so far names, for
// Options.AllErrors; the others are typed dyn, so that expressions reading
// them type-check without guessing their kind.
func (d *diagnostics) sound(resources []*resource) []*resource {
	failed := map[string]bool{}
	for _, err := range d.errs {
		if e, ok := err.(*Error); ok && e.ResourceID != "" {
			failed[e.ResourceID] = true
		}
	}
	var out []*resource
	for _, r := range resources {
		if failed[r.node.ID] {
			r.decl = apiservercel.DynType
			continue
		}
		out = append(out, r)
	}
	return out
}

// err joins what was recorded; nil when nothing was.
func (d *diagnostics) err() error { return errors.Join(d.errs...) }

// extension records a use of an extension or, under Options.Strict, fails.
func (d *diagnostics) extension(resourceID, path, feature string) {
	if d.strict {
		d.fail(&Error{ResourceID: resourceID, Path: path, Err: errorf(ErrExtension, "%s: a fleetgraph extension kro does not support (Options.Strict)", feature)})
		return
	}
	d.exts = append(d.exts, Extension{ResourceID: resourceID, Path: path, Feature: feature})
}

// extensions returns what was recorded, sorted and without repeats.
func (d *diagnostics) extensions() []Extension {
	sort.SliceStable(d.exts, func(i, j int) bool { return d.exts[i].String() < d.exts[j].String() })
	var out []Extension
	for i, e := range d.exts {
		if i == 0 || e != d.exts[i-1] {
			out = append(out, e)
		}
	}
	return out
}
