package graph

import (
	"context"
	"errors"
)

// statusProgram evaluates spec.schema.status: one leaf per projected field.
type statusProgram struct {
	leaves []statusLeaf
}

type statusLeaf struct {
	path *fieldPath // inside status
	t    tmpl
}

// fieldPath is a path of object keys as a chain of parents: the leaves of
// a large status share their prefixes instead of each holding a copy.
type fieldPath struct {
	parent *fieldPath
	key    string
}

// eval computes every field whose inputs are present. Fields that wait on
// a resource are left out; other errors are joined and returned alongside
// the fields that did evaluate.
func (sp *statusProgram) eval(ctx context.Context, lim *Limits, vals Values) (map[string]any, error) {
	out := map[string]any{}
	if sp == nil {
		return out, nil
	}
	sc := newScope(ctx, lim, vals, nil, "")
	defer sc.done()
	sc.bound(newSizer("the status", "MaxStatusBytes", lim.MaxStatusBytes))
	var errs []error
	for _, leaf := range sp.leaves {
		v, ok, err := leaf.t.eval(sc)
		switch {
		case errors.Is(err, ErrPending):
			continue
		case errors.Is(err, ErrLimit):
			// A status past its bound is not written at all.
			return map[string]any{}, err
		case err != nil:
			errs = append(errs, err)
			continue
		case ok:
			setPath(out, leaf.path, v)
		}
	}
	return out, errors.Join(errs...)
}

func setPath(m map[string]any, p *fieldPath, v any) {
	objectAt(m, p.parent)[p.key] = v
}

// objectAt returns the object at p in m, making the missing ones.
func objectAt(m map[string]any, p *fieldPath) map[string]any {
	if p == nil {
		return m
	}
	parent := objectAt(m, p.parent)
	next, ok := parent[p.key].(map[string]any)
	if !ok {
		next = map[string]any{}
		parent[p.key] = next
	}
	return next
}
