package graph

import (
	"container/heap"
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
// comes first in spec.resources. The ready ones wait in a heap by position,
// so thousands of resources sort in n log n.
func topological(rs []*resource, byID map[string]*resource) []*Node {
	pos := make(map[string]int, len(rs))
	for i, r := range rs {
		pos[r.node.ID] = i
	}
	remaining := make([]int, len(rs))
	dependents := make([][]int, len(rs))
	ready := &positions{}
	for i, r := range rs {
		remaining[i] = len(r.node.Dependencies)
		for _, d := range r.node.Dependencies {
			dependents[pos[d]] = append(dependents[pos[d]], i)
		}
		if remaining[i] == 0 {
			heap.Push(ready, i)
		}
	}
	out := make([]*Node, 0, len(rs))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		out = append(out, rs[i].node)
		for _, d := range dependents[i] {
			if remaining[d]--; remaining[d] == 0 {
				heap.Push(ready, d)
			}
		}
	}
	return out
}

// positions is a min-heap of positions in spec.resources.
type positions []int

func (p positions) Len() int           { return len(p) }
func (p positions) Less(i, j int) bool { return p[i] < p[j] }
func (p positions) Swap(i, j int)      { p[i], p[j] = p[j], p[i] }
func (p *positions) Push(x any)        { *p = append(*p, x.(int)) }
func (p *positions) Pop() any {
	old := *p
	x := old[len(old)-1]
	*p = old[:len(old)-1]
	return x
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
