// Package crdcompat tells whether replacing one CRD schema with another
// could break what is already stored or written against it. It compares
// two generated OpenAPI schemas and needs nothing else: no compiler, no
// CEL, no cluster. The compiler (graph.CheckCompatible), the hub's CRD
// fan-out and the kcp APIExport publisher all refuse a breaking change with
// the same verdict and the same words, so it lives here, below all three.
package crdcompat
