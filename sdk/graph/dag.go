package graph

import (
	"slices"
	"strings"
)

// order sorts the resources topologically, ties broken by their order in
// spec.resources, and groups them in levels. It fails with ErrCycle naming
// the first cycle found.
func order(rs []*resource) (nodes []*Node, levels [][]*Node, err error) {
	byID := make(map[string]*resource, len(rs))
	for _, r := range rs {
		byID[r.node.ID] = r
	}
	if cycle := findCycle(rs, byID); cycle != nil {
		return nil, nil, &Error{ResourceID: cycle[0], Err: errorf(ErrCycle, "dependency cycle: %s", strings.Join(cycle, " -> "))}
	}
	nodes = topological(rs, byID)
	return nodes, group(nodes), nil
}

// findCycle returns a cycle as a path that starts and ends with the same
// id, or nil. Resources are visited in source order and dependencies in
// sorted order, so the answer is stable.
func findCycle(rs []*resource, byID map[string]*resource) []string {
	const (
		unvisited = iota
		onStack
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(id string) []string
	visit = func(id string) []string {
		state[id] = onStack
		stack = append(stack, id)
		for _, dep := range byID[id].node.Dependencies {
			switch state[dep] {
			case onStack:
				start := slices.Index(stack, dep)
				return append(slices.Clone(stack[start:]), dep)
			case unvisited:
				if c := visit(dep); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[id] = done
		return nil
	}
	for _, r := range rs {
		if state[r.node.ID] == unvisited {
			if c := visit(r.node.ID); c != nil {
				return c
			}
		}
	}
	return nil
}

// topological is Kahn's algorithm, always taking the ready resource that
// comes first in spec.resources.
func topological(rs []*resource, byID map[string]*resource) []*Node {
	remaining := make(map[string]int, len(rs))
	dependents := map[string][]string{}
	for _, r := range rs {
		remaining[r.node.ID] = len(r.node.Dependencies)
		for _, d := range r.node.Dependencies {
			dependents[d] = append(dependents[d], r.node.ID)
		}
	}
	out := make([]*Node, 0, len(rs))
	placed := map[string]bool{}
	for len(out) < len(rs) {
		for _, r := range rs {
			if placed[r.node.ID] || remaining[r.node.ID] > 0 {
				continue
			}
			placed[r.node.ID] = true
			out = append(out, r.node)
			for _, d := range dependents[r.node.ID] {
				remaining[d]--
			}
			break
		}
	}
	return out
}

// group puts each node one level below its deepest dependency.
func group(nodes []*Node) [][]*Node {
	level := make(map[string]int, len(nodes))
	var levels [][]*Node
	for _, n := range nodes {
		l := 0
		for _, d := range n.Dependencies {
			l = max(l, level[d]+1)
		}
		level[n.ID] = l
		for len(levels) <= l {
			levels = append(levels, nil)
		}
		levels[l] = append(levels[l], n)
	}
	return levels
}

// reversed returns levels in reverse order: the deletion waves.
func reversed(levels [][]*Node) [][]*Node {
	out := slices.Clone(levels)
	slices.Reverse(out)
	return out
}
