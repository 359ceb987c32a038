package spoke

import (
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// Version is one version of a graph as it is given to Serve: the compiled
// graph, which is immutable and knows nothing of what its caller decides
// later, with what the caller decided about it.
type Version struct {
	// Graph is the compiled graph (graph.Compile). Required.
	Graph *graph.Graph
	// Revision numbers this version for the caller (the sdk's hub uses its
	// GraphRevision records); the runtime only reports it back (Served,
	// Latest) and gives it to the gate. Defaults to 0: unnumbered.
	Revision int64
	// Removal says that the graph is being removed, and how its instances
	// are served until the caller stops it. Defaults to "": the graph is
	// served normally.
	Removal RemovalMode
}

// RemovalMode is how a Runtime serves a graph being removed.
type RemovalMode string

const (
	// RemovalFinalize serves deletions only: an instance being deleted has
	// its children deleted and then its finalizer released; nothing else
	// is reconciled.
	RemovalFinalize RemovalMode = "Finalize"
	// RemovalRelease takes the runtime's finalizer off every instance that
	// holds it and leaves the children in place, marked as released so
	// that they are never collected as orphans.
	RemovalRelease RemovalMode = "Release"
)
