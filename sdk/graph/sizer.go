package graph

// sizer bounds the JSON values that one evaluation method builds: the
// objects Render returns, the status Status returns, the lists forEach
// expands. Every string, number and element converted or copied is
// counted, about as many bytes as it takes in JSON, and the conversion
// stops once the count passes the allowance, so that a value repeated many
// times over (a list of the same large string, built in a few steps) is
// refused before it is copied out.
//
// A sizer with a budget draws its allowance from the instance's rendering
// allowance (Limits.MaxRenderedBytes) a chunk at a time, so that the nodes
// evaluated in parallel share it; done gives back what was not used.
type sizer struct {
	left   int
	budget *Budget
	// reserved is what was taken from the budget and not yet used.
	reserved int
	limit    int
	name     string // the limit's field, for the error
	what     string // what is being built, for the error
}

// renderChunk is how much of the rendering allowance a sizer takes at once.
const renderChunk = 64 << 10

// newSizer bounds a value to limit bytes.
func newSizer(what, name string, limit int) sizer {
	return sizer{left: limit, limit: limit, name: name, what: what}
}

// renderSizer bounds a rendered object by what is left of b's allowance.
func renderSizer(b *Budget) sizer {
	return sizer{budget: b, limit: b.limits.MaxRenderedBytes, name: "MaxRenderedBytes", what: "the instance's rendered children"}
}

// take counts n bytes.
func (s *sizer) take(n int) error {
	if s == nil {
		return nil
	}
	s.left -= n
	if s.left >= 0 {
		return nil
	}
	if s.budget != nil {
		got := s.budget.reserveRendered(max(renderChunk, -s.left))
		s.left += got
		s.reserved += got
		if s.left >= 0 {
			return nil
		}
	}
	return errorf(ErrLimit, "%s would pass %d bytes (Limits.%s)", s.what, s.limit, s.name)
}

// done gives back to the budget what was reserved and not used.
func (s *sizer) done() {
	if s == nil || s.budget == nil {
		return
	}
	s.budget.releaseRendered(min(s.left, s.reserved))
	s.left, s.reserved = 0, 0
}

// bound makes s the scope's sizer.
func (sc *scope) bound(s sizer) {
	if unmetered {
		return
	}
	sc.sz = s
	sc.sizer = &sc.sz
}
