// Package sdk is fleetgraph's public entry point: it builds a Hub that compiles
// ResourceGraphDefinitions, fans their CRDs out to every cluster a
// multicluster-runtime provider engages, and reconciles instances in each of
// them.
//
// Not built yet: NewHub, Hub.SetupWithManager, Hub.RegisterGraph,
// Hub.UnregisterGraph and Hub.FleetStatus will live here.
package sdk
