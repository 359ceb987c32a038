// Package diagram draws a compiled graph: its resources as nodes grouped
// by level (the nodes of one level are applied in parallel), its
// dependencies as edges, in Mermaid (which GitHub renders in Markdown) and
// Graphviz DOT.
//
// What is drawn for kro's resource options:
//   - a template: a box, "id" over "apiVersion Kind";
//   - forEach: a box drawn as a stack (Mermaid's subroutine shape, DOT's
//     box3d) with what each iterator ranges over ("forEach: region in
//     ${schema.spec.regions}");
//   - externalRef: a cylinder (read, never written) marked "externalRef";
//   - includeWhen: a dashed border, and its conditions;
//   - an edge from a resource to each resource that reads it, so edges
//     point down the order of creation.
//
// A hub graph (one whose resources have targets) groups the nodes of each
// level by the cluster they are written in: a literal target by its name,
// a computed one by its expression, a kubeconfig Secret by the Secret, and
// the resources without a target in the instance's own cluster, the hub.
// In DOT each cluster keeps one colour across levels.
package diagram

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// maxCondition is how much of an includeWhen condition (or a computed
// target) a label shows, and maxRange of what a forEach ranges over.
const (
	maxCondition = 48
	maxRange     = 72
)

// Model is what a diagram shows of one graph.
type Model struct {
	// Title names the graph and its kind.
	Title string
	// Levels hold the resources, level by level.
	Levels [][]Resource
	// Edges go from a resource to one that depends on it.
	Edges [][2]string
	// Clusters are where a hub graph writes its resources (Resource's
	// Cluster), in order of first appearance; nil for a graph that is not
	// a hub graph.
	Clusters []string
}

// Resource is one node of the diagram.
type Resource struct {
	ID       string
	Kind     string // apiVersion and kind
	External bool
	// ForEach says, per iterator of a collection, what it ranges over:
	// "region in ${schema.spec.regions}", shortened.
	ForEach []string
	// IncludeWhen holds the conditions, shortened.
	IncludeWhen []string
	// Cluster is, in a hub graph, the cluster the resource is written
	// in: its target's literal name, the expression that computes it
	// (shortened), "Secret namespace/name" for a kubeconfig Secret, or
	// InstanceCluster.
	Cluster string
}

// InstanceCluster is the Cluster of a hub graph's resource without a
// target: it is written beside its instance, on the hub.
const InstanceCluster = "the instance's cluster (the hub)"

// New builds the model of g, compiled from rgd (which holds the text of
// the conditions and iterators).
func New(g *graph.Graph, rgd *v1alpha1.ResourceGraphDefinition) Model {
	inst := g.Instance.GVK
	m := Model{Title: fmt.Sprintf("%s: %s %s", g.Name, inst.GroupVersion(), inst.Kind)}
	hub := g.IsHubGraph()
	for _, level := range g.Levels {
		var row []Resource
		for _, n := range level {
			r := resourceOf(n, rgd.Spec.Resources[n.Index])
			if hub {
				r.Cluster = clusterOf(n.Target())
				if !slices.Contains(m.Clusters, r.Cluster) {
					m.Clusters = append(m.Clusters, r.Cluster)
				}
			}
			row = append(row, r)
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
		names := slices.Sorted(maps.Keys(dim))
		for _, name := range names {
			r.ForEach = append(r.ForEach, shorten(name+" in "+dim[name], maxRange))
		}
	}
	for _, c := range src.IncludeWhen {
		r.IncludeWhen = append(r.IncludeWhen, shorten(c, maxCondition))
	}
	return r
}

// clusterOf names where a target writes, for a diagram.
func clusterOf(t *graph.Target) string {
	switch {
	case t == nil:
		return InstanceCluster
	case t.SecretName != "":
		return "Secret " + t.SecretNamespace + "/" + t.SecretName
	case t.Computed():
		return shorten(t.Expression, maxCondition)
	}
	return t.Name
}

// clusterLabel is the label of a group of resources written in cluster.
func clusterLabel(cluster string) string {
	if cluster == InstanceCluster {
		return cluster
	}
	return "cluster: " + cluster
}

// group is the resources of one level written in one cluster.
type group struct {
	cluster   string
	resources []Resource
}

// groups cuts a level by Cluster, clusters in order of first appearance;
// one group when the graph is not a hub graph.
func groups(level []Resource) []group {
	var out []group
	for _, r := range level {
		i := slices.IndexFunc(out, func(g group) bool { return g.cluster == r.Cluster })
		if i < 0 {
			out, i = append(out, group{cluster: r.Cluster}), len(out)
		}
		out[i].resources = append(out[i].resources, r)
	}
	return out
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
	for _, f := range r.ForEach {
		out = append(out, "forEach: "+f)
	}
	for _, c := range r.IncludeWhen {
		out = append(out, "includeWhen: "+c)
	}
	return out
}
