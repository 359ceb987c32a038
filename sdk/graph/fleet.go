package graph

import (
	"slices"

	apiservercel "k8s.io/apiserver/pkg/cel"
)

// The fleet variable is a fleetgraph extension for hub graphs: fleet.clusters
// lists the engaged clusters (their names and labels, like the cluster
// variable) that the runtime lets the instance use (the hub shows only its
// allowed set), so that one resource with a forEach over it, and a target
// read from its iterator, makes one object per selected cluster:
//
//	forEach:
//	- peer: ${fleet.clusters.filter(c, c.labels.?mesh.orValue("") == "true")}
//	target: {cluster: {name: ${peer.name}}}
//
// Only a hub graph may read it: the runtime that binds it runs on the hub.
// As with cluster, a resource id or iterator named fleet keeps kro's
// meaning and the variable is not declared.

const (
	// VarFleet is the name of the fleet variable, and its key in Values.
	VarFleet = "fleet"
	// fleetTypeName is the CEL type of the fleet variable.
	fleetTypeName = "fleetgraph.Fleet"
	// fleetFeature names the extension in Graph.Extensions.
	fleetFeature = "the fleet variable"
	// maxFleetClusters is the size the cost estimator assumes for
	// fleet.clusters.
	maxFleetClusters = 10000
)

// fleetDecl is the type of the fleet variable.
var fleetDecl = apiservercel.NewObjectType(fleetTypeName, map[string]*apiservercel.DeclField{
	"clusters": apiservercel.NewDeclField("clusters", apiservercel.NewListType(clusterDecl, maxFleetClusters), true, nil, nil),
})

// FleetCluster is one engaged cluster as the fleet variable lists it.
type FleetCluster struct {
	Name   string
	Labels map[string]string
}

// FleetValue is the value of the fleet variable for these clusters: what
// a runtime puts in Values under VarFleet. Clusters are listed by name.
func FleetValue(clusters []FleetCluster) map[string]any {
	sorted := slices.Clone(clusters)
	slices.SortFunc(sorted, func(a, b FleetCluster) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	list := make([]any, 0, len(sorted))
	for _, c := range sorted {
		list = append(list, ClusterValue(c.Name, c.Labels))
	}
	return map[string]any{"clusters": list}
}

// UsesFleet reports whether the graph's expressions read the fleet
// variable: its runtime must bind it, and reconcile the instances again
// when the fleet changes.
func (g *Graph) UsesFleet() bool { return g.usesFleet }

// fleetDeclared reports whether resources leave the name fleet to the
// variable.
func fleetDeclared(resources []*resource) bool {
	for _, r := range resources {
		if r.node.ID == VarFleet {
			return false
		}
		for _, it := range r.iterators {
			if it.name == VarFleet {
				return false
			}
		}
	}
	return true
}
