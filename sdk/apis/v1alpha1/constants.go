package v1alpha1

// Our own bookkeeping lives under fleetgraph.dev so that fleetgraph and kro
// never fight over an object.
const (
	// AnnotationAllowBreakingChanges, set to "true" on a
	// ResourceGraphDefinition, lets the hub apply a generated CRD whose schema
	// breaks compatibility with the one already served (a removed field, a
	// changed type, a new required field...). Without it such a change is
	// refused and reported.
	AnnotationAllowBreakingChanges = "fleetgraph.dev/allow-breaking-changes"

	// AnnotationKroAllowBreakingChanges is kro's spelling of
	// AnnotationAllowBreakingChanges, honoured the same way so that an RGD
	// written for kro keeps its meaning. Read both through
	// AllowsBreakingChanges.
	AnnotationKroAllowBreakingChanges = "kro.run/allow-breaking-changes"

	// LabelManagedBy is the label set on every generated CRD.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByFleetgraph is the value of LabelManagedBy on generated CRDs.
	ManagedByFleetgraph = "fleetgraph"

	// FieldManager is the server-side apply field manager fleetgraph
	// writes with unless told otherwise: CRDs and admission policies (the
	// hub), children and instances (the instance engine), revisions and
	// rollouts. It is declared here once: hub.DefaultFieldManager and
	// spoke.DefaultFieldManager are this constant.
	FieldManager = "fleetgraph"

	// Finalizer holds an instance until its children are deleted. It is
	// declared here once: spoke.Finalizer is this constant.
	Finalizer = "fleetgraph.dev/finalizer"
)

// LabelGraph, on a generated CRD, names the ResourceGraphDefinition it was
// generated from.
const LabelGraph = "fleetgraph.dev/resource-graph-definition"

// AllowsBreakingChanges reports whether rgd opts in to breaking schema
// changes: AnnotationAllowBreakingChanges or AnnotationKroAllowBreakingChanges
// set to exactly "true" (as kro compares it). A nil rgd does not.
func AllowsBreakingChanges(rgd *ResourceGraphDefinition) bool {
	if rgd == nil {
		return false
	}
	a := rgd.GetAnnotations()
	return a[AnnotationAllowBreakingChanges] == "true" || a[AnnotationKroAllowBreakingChanges] == "true"
}
