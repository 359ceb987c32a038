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
// NewAPIExport(cfg, export, opts) wraps
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
// resources and the resources the export claims, and reads come from the
// shared wildcard cache. So the hub cannot apply a CRD per cluster (CRDs
// are not served there, and a consumer's workspace is not the hub's to
// change). The APIExportProvider is also a hub.Publisher, so a hub whose
// provider it is instead:
//
//   - converts each graph's generated CRD into an APIResourceSchema in the
//     provider workspace, named v<hash>.<plural>.<group> after its content
//     (schemas are immutable: a changed schema is a new object, and old
//     ones are left in place);
//   - lists it in the APIExport (created when missing), with a permission
//     claim (verbs get, list, watch, create, update, patch, delete) for
//     every child kind, resolved to a resource through the provider
//     workspace's discovery;
//   - switches the export to a changed schema only when the change is
//     compatible with the listed one, or the RGD allows breaking changes:
//     until then the previous schema, and the previous graph version, keep
//     serving, and every consumer is reported Incompatible with the reason;
//   - serves a graph on a consumer once its APIBinding accepts every claim
//     the graph needs, is bound to the published schema
//     (status.boundResources) and the virtual workspace's discovery lists
//     the instance and child kinds; a binding that does not accept the
//     claims is reported Incompatible ("APIBinding <name> does not accept
//     configmaps (core)") in FleetStatus and status.fleet;
//   - reconciles instances through the virtual workspace, so children land
//     in the instance's own workspace only; installs no admission policy
//     (the runtime stamps its finalizer itself) and probes each consumer
//     with GET /apis, since the virtual workspace serves no /readyz.
//
// What works on kcp v0.30.0, each proven by an integration test against
// the real server (hub_apiexport_integration_test.go, examples/kcp):
// publishing and updating the export; two consumers binding it, each
// reconciling its own instances to ACTIVE with their ConfigMaps in their
// own workspace; a compatible schema change moving both consumers to the
// new schema; a breaking change refused while the previous schema keeps
// serving; a binding without the accepted claim reported; and a consumer
// that deletes its binding disengaged with nothing of it left running.
// Limits: claims carry no identity hash, so children must be kinds built
// into kcp workspaces (ConfigMaps, Secrets, ServiceAccounts, ...), not
// other exports' resources; a plain kcp workspace serves no Deployments.
// Removing a graph (UnregisterGraph) leaves its resource listed in the
// export and is not covered by a test in this mode yet;
// CRDs.DeleteOnUnregister does not apply.
// An instance created before a compatible change that adds a defaulted
// field is held by the shared cache as it was listed, without the new
// field; the runtime applies the schema's defaults to every instance it
// reads, as the server would, so it is reconciled with the default.
// kcp v0.30.0 lists a fresh export's virtual-workspace URL in the
// APIExportEndpointSlice a moment before serving it, and the wrapped
// provider tries each URL once; NewAPIExport therefore waits (up to
// APIExportOptions.EndpointWait) until a new URL answers discovery.
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
