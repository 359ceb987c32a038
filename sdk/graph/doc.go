// Package graph compiles a ResourceGraphDefinition into an immutable Graph:
// the generated CRD, the resources in dependency order and their CEL programs,
// type-checked once so that reconciling an instance never parses or compiles.
//
// The package does no I/O except through a schema resolver.
package graph
