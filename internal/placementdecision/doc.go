// Package placementdecision reads and writes PlacementDecisions
// (multicluster.x-k8s.io/v1alpha1, KEP-5313): the scheduler-neutral list of
// chosen clusters that one scheduler writes and many tools read.
//
// In: Read returns the cluster names a decision lists, from the
// PlacementDecision of that name and every slice labelled with it as its
// decision key, bounded (MaxSlices slices of MaxPerSlice clusters); the
// rollout controller narrows a GraphRollout's placement to them.
//
// Out: a Publisher writes the clusters a GraphRollout places its graph on
// as slices of at most MaxPerSlice clusters, named <graph>-<index>,
// labelled with the graph as decision key and placement key, scheduler
// "fleetgraph". It writes and deletes only slices its field manager wrote
// and that carry fleetgraph's managed-by label; a PlacementDecision of the
// same name that someone else wrote is never overwritten: the publication
// is refused with ErrNotOurs.
//
// The package sits on the hub side: it imports the API types and
// controller-runtime's client only.
package placementdecision
