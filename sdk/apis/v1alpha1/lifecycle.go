package v1alpha1

// Lifecycle bookkeeping on ResourceGraphDefinitions the hub claims.
const (
	// FinalizerRGD is put on every RGD the hub claims, so that deleting the
	// RGD waits until the graph's admission policy is gone from every
	// spoke and its instances are either gone or released.
	FinalizerRGD = "fleetgraph.dev/finalizer"
	// AnnotationOrphanInstances, set to "true" on an RGD, makes its removal
	// release the instances (our finalizer is taken off them, children are
	// left in place) instead of waiting for them to be deleted.
	AnnotationOrphanInstances = "fleetgraph.dev/orphan-instances"
)

// Condition types kro sets besides GraphAccepted and Ready; Ready is True
// only when all of them are.
const (
	// ConditionKindReady is true when the generated CRD is established on
	// every engaged cluster.
	ConditionKindReady = "KindReady"
	// ConditionControllerReady is true when the instance runtime serves
	// the graph.
	ConditionControllerReady = "ControllerReady"
)
