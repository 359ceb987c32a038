// Package spokeschemas type-checks a compiled graph against the schemas a
// spoke serves of its child kinds, which may differ from the hub's (an
// older Kubernetes, a CRD whose field has another type). A Checker's Check
// is the Check of the hub.Graph that sdk.Hub makes from each compiled
// graph: a spoke that disagrees is CRDIncompatible, named with the kind,
// field path and expression, and keeps the version it serves.
//
// It is apart from the hub package because it needs the compiler, and the
// hub package does not import it.
package spokeschemas
