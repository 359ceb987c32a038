package graph

import "slices"

// Reads reports whether anything the graph evaluates reads the observed
// value of the node with the given id (the objects the API server answered
// for its children, or what its externalRef found): another node's
// expressions (its Dependencies), the node's own readyWhen, a status
// projection or a status condition. A runtime need not keep the observed
// value of a node nothing reads: no evaluation can tell it is missing.
// Reads is false for an id the graph does not have.
func (g *Graph) Reads(id string) bool {
	n := g.byID[id]
	if n == nil {
		return false
	}
	if len(n.program.readyWhen) > 0 {
		return true
	}
	for _, other := range g.Nodes {
		if slices.Contains(other.Dependencies, id) {
			return true
		}
	}
	if g.status != nil {
		for _, leaf := range g.status.leaves {
			if readsRef(leaf.t.programs(nil), id) {
				return true
			}
		}
	}
	for _, c := range g.conditions {
		if readsRef([]*program{c.p}, id) {
			return true
		}
	}
	return false
}

func readsRef(progs []*program, id string) bool {
	for _, p := range progs {
		if slices.Contains(p.refs, id) {
			return true
		}
	}
	return false
}
