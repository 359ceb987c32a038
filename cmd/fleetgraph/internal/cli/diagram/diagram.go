// Package diagram draws a compiled graph: its resources as nodes grouped
// by level (the nodes of one level are applied in parallel), its
// dependencies as edges, in Mermaid (which GitHub renders in Markdown) and
// Graphviz DOT.
//
// What is drawn for kro's resource options:
//   - a template: a box, "id" over "apiVersion Kind";
//   - forEach: a box drawn as a stack (Mermaid's subroutine shape, DOT's
//     box3d) with its iterators ("forEach: region, zone");
//   - externalRef: a cylinder (read, never written) marked "externalRef";
//   - includeWhen: a dashed border, and its conditions;
//   - an edge from a resource to each resource that reads it, so edges
//     point down the order of creation.
package diagram

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// maxCondition is how much of an includeWhen condition a label shows.
const maxCondition = 48

// Model is what a diagram shows of one graph.
type Model struct {
	// Title names the graph and its kind.
	Title string
	// Levels hold the resources, level by level.
	Levels [][]Resource
	// Edges go from a resource to one that depends on it.
	Edges [][2]string
}

// Resource is one node of the diagram.
type Resource struct {
	ID       string
	Kind     string // apiVersion and kind
	External bool
	// ForEach names the iterators of a collection.
	ForEach []string
	// IncludeWhen holds the conditions, shortened.
	IncludeWhen []string
}

// New builds the model of g, compiled from rgd (which holds the text of
// the conditions and iterators).
func New(g *graph.Graph, rgd *v1alpha1.ResourceGraphDefinition) Model {
	inst := g.Instance.GVK
	m := Model{Title: fmt.Sprintf("%s: %s %s", g.Name, inst.GroupVersion(), inst.Kind)}
	for _, level := range g.Levels {
		var row []Resource
		for _, n := range level {
			row = append(row, resourceOf(n, rgd.Spec.Resources[n.Index]))
		}
		m.Levels = append(m.Levels, row)
	}
	for _, n := range g.Nodes {
		for _, dep := range n.Dependencies {
			m.Edges = append(m.Edges, [2]string{dep, n.ID})
		}
	}
	slices.SortFunc(m.Edges, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	return m
}

func resourceOf(n *graph.Node, src v1alpha1.Resource) Resource {
	r := Resource{ID: n.ID, Kind: strings.TrimSpace(n.GVK.GroupVersion().String() + " " + n.GVK.Kind), External: n.External}
	for _, dim := range src.ForEach {
		for name := range dim {
			r.ForEach = append(r.ForEach, name)
		}
	}
	for _, c := range src.IncludeWhen {
		r.IncludeWhen = append(r.IncludeWhen, shorten(c, maxCondition))
	}
	return r
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// lines is what a node's label says, line by line.
func (r Resource) lines() []string {
	out := []string{r.ID, r.Kind}
	if r.External {
		out = append(out, "externalRef")
	}
	if len(r.ForEach) > 0 {
		out = append(out, "forEach: "+strings.Join(r.ForEach, ", "))
	}
	for _, c := range r.IncludeWhen {
		out = append(out, "includeWhen: "+c)
	}
	return out
}
