package spoke

import "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"

// Finalizer is the finalizer a Runtime keeps on every instance it serves
// (or that the hub's admission policy stamps on new ones): a deleted
// instance goes once its children are deleted. RemovalRelease takes it
// off. A caller that removes a graph counts the instances still holding
// it to know when the removal is done. Its value is
// "fleetgraph.dev/finalizer".
const Finalizer = v1alpha1.Finalizer
