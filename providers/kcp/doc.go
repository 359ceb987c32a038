// Package kcp provides clusters from kcp logical clusters, in two modes: the
// workspaces below a parent workspace (Provider, New), or the consumer
// workspaces that bind an APIExport (APIExportProvider, NewAPIExport).
//
// In both modes a cluster is named by its logical cluster name
// (logicalcluster.Name, e.g. "2ju5dn8ugkvm1tyr"), which never changes while
// the workspace exists and is never reused; a human path (root:org:team) is
// not stable (a workspace can be deleted and re-created under the same path)
// and is available from Provider.Path in workspace mode.
//
// # Workspace mode
//
// New(cfg, parent, opts) watches tenancy.kcp.io/v1alpha1 Workspaces in the
// parent workspace (read as unstructured objects, so the SDK does not depend
// on kcp's API module) and engages each child once its phase is Ready, as a
// cluster whose requests go to <server>/clusters/<logical cluster name>; with
// Options.Recursive, every workspace of the tree below the parent. A
// workspace being deleted, or gone, is disengaged (its context cancelled),
// with its subtree. Engaging uses multicluster-runtime's pkg/clusters (start,
// cache sync, engage, remove).
//
// Each engaged workspace is a whole, ordinary API surface: the hub fans a
// graph out as it does to any Kubernetes cluster, by applying the generated
// CRD in every workspace and then watching instances there. Isolation is the
// workspace's: a CRD applied in one workspace is invisible in its siblings.
//
// # APIExport mode
//
// NewAPIExport(cfg, endpointSlice, opts) wraps
// github.com/kcp-dev/multicluster-provider's apiexport provider (v0.8.0). It
// reads the APIExportEndpointSlice (kcp creates one named after each
// APIExport, in the export's workspace), opens one wildcard cache per
// virtual-workspace URL listed in the slice, and engages every workspace that
// has a Ready APIBinding to the export, under its logical cluster name. It is
// verified against kcp v0.30.0 (the newest kcp that builds from this module
// proxy; the provider was written for kcp 0.32): the apis.kcp.io/v1alpha1
// APIExportEndpointSlice (with status.endpoints) and APIBinding it watches
// are served by kcp 0.30 with the same fields, and kcp 0.30 fills the slice's
// endpoints once the export has a binding.
//
// An engaged cluster of this mode reaches its workspace through the
// APIExport's virtual workspace: it sees and serves only the exported
// resources (and the resources claimed by the export's permission claims),
// and reads come from the shared wildcard cache. So the hub must fan out
// differently: it cannot apply a CRD per cluster (CRDs are not exported, and
// a consumer's workspace is not the hub's to change). Instead the hub
// publishes each graph's schema once, as an APIResourceSchema listed in the
// APIExport in the service provider's workspace; consumers opt in by binding
// the export, which is what makes them clusters here; and a schema change is
// a new APIResourceSchema (they are immutable) that the export switches to.
// Instances and their children are then handled per engaged cluster as usual,
// limited to exported or claimed resources.
//
// # Wiring
//
//	provider, err := kcp.New(kcpConfig, logicalcluster.NewPath("root:org"), kcp.Options{})
//	mgr, err := mcmanager.New(hubConfig, provider, manager.Options{})
//	err = mgr.Start(ctx) // starts the provider
//
// The hub (mcmanager's local manager) may be any cluster, including a kcp
// workspace: a rest.Config whose host ends in /clusters/root:org.
package kcp
