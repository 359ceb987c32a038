package contract

import "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"

// Labels, annotations and the finalizer that fleetgraph puts on the objects
// it manages. They live under fleetgraph.dev so that fleetgraph and kro never
// fight over an object.
const (
	// LabelInstanceUID is the UID of the instance that owns a child.
	LabelInstanceUID = "fleetgraph.dev/instance-uid"
	// LabelInstanceName is the owning instance's name.
	LabelInstanceName = "fleetgraph.dev/instance-name"
	// LabelInstanceNamespace is the owning instance's namespace (empty for a
	// cluster-scoped instance).
	LabelInstanceNamespace = "fleetgraph.dev/instance-namespace"
	// LabelGraph is the name of the graph (ResourceGraphDefinition).
	LabelGraph = "fleetgraph.dev/graph"
	// LabelNodeID is the resource id of the node that rendered the child.
	LabelNodeID = "fleetgraph.dev/node-id"
	// LabelManagedBy and ManagedBy mark every child as ours.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "fleetgraph"

	// Finalizer holds an instance until its children are deleted.
	Finalizer = v1alpha1.Finalizer
	// AnnotationChildKinds lists the kinds an instance's children may have,
	// as comma-separated apiVersion/Kind. Children themselves are found by
	// their LabelInstanceUID; this list says which kinds to look in, even
	// after the graph stopped using one or the process restarted. Being
	// user-editable, it never opens a watch: a listed kind the graph does
	// not render is listed once per instance, selecting on our labels.
	AnnotationChildKinds = "fleetgraph.dev/child-kinds"
	// AnnotationReconcile set to ReconcileSuspended stops reconciling an
	// instance. AnnotationKroReconcile is kro's equivalent, honoured too.
	AnnotationReconcile    = "fleetgraph.dev/reconcile"
	AnnotationKroReconcile = "kro.run/reconcile"
	ReconcileSuspended     = "suspended"
	// AnnotationReleased, set to "true" on a child, says that its instance
	// was released (our finalizer taken off on purpose: a graph removed
	// with the orphan option, a cluster that left the fleet or stopped
	// being placed) and the child is left in place deliberately: it is
	// never collected as an orphan once its instance is gone.
	AnnotationReleased = "fleetgraph.dev/released"
)

// Instance states written to status.state, as kro writes them.
const (
	StateInProgress = "IN_PROGRESS"
	StateActive     = "ACTIVE"
	StateDeleting   = "DELETING"
	StateError      = "ERROR"
)

// Condition types written to status.conditions. Ready summarises the others.
const (
	ConditionInstanceManaged = "InstanceManaged"
	ConditionGraphResolved   = "GraphResolved"
	ConditionResourcesReady  = "ResourcesReady"
	ConditionReady           = "Ready"
)
