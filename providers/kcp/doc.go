// Package kcp provides clusters from kcp logical clusters: the workspaces
// below a parent, or the consumer workspaces that bind an APIExport.
//
// Not built yet.
package kcp
