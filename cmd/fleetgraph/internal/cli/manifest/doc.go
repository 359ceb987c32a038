// Package manifest reads ResourceGraphDefinitions from files and
// directories for the fleetgraph command, and remembers where each one
// stands in its file, so that a problem the compiler finds (a resource id
// and a field path) is reported at the line a person must edit.
package manifest
