package spoke

import "github.com/fleetgraph/fleetgraph/sdk/graph"

// Version is one version of a graph as given to Serve: the compiled graph,
// which is immutable and knows nothing of what its server decides later,
// with what the server decided about it.
type Version struct {
	// Graph is the compiled graph. Required.
	Graph *graph.Graph
	// Revision numbers this version for the caller (the hub's
	// GraphRevision records); the runtime only reports it (Served). 0 when
	// unnumbered.
	Revision int64
	// Removal, when set, says that the graph is being removed, and how its
	// instances are served until then. Empty serves the graph normally.
	Removal RemovalMode
}

// RemovalMode is how the runtime serves a graph being removed.
type RemovalMode string

const (
	// RemovalFinalize: instances being deleted are finalized (children
	// deleted, then the finalizer released); nothing else is reconciled.
	RemovalFinalize RemovalMode = "Finalize"
	// RemovalRelease: every instance holding the runtime's finalizer is
	// released (the finalizer is taken off, children are left in place),
	// and no orphan is collected.
	RemovalRelease RemovalMode = "Release"
)
