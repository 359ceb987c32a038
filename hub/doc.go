// Package hub holds the hub-side controllers: the ResourceGraphDefinition
// controller, the CRD fan-out to every engaged spoke, and fleet status
// aggregation.
//
// Not built yet.
package hub
