// Package fleetgraph runs kro-style resource graphs across a fleet of
// Kubernetes clusters, as an SDK that a platform embeds rather than a binary
// it deploys.
//
// A ResourceGraphDefinition (wire-compatible with kro.run/v1alpha1) lives on
// one hub cluster. The hub compiles it once — SimpleSchema to an OpenAPI
// schema and a CRD, every ${...} CEL expression type-checked, the resources
// ordered as a DAG — and fans the generated CRD out to every spoke cluster a
// multicluster-runtime provider engages. Instances of that CRD, and every
// child resource they produce, live on the spokes: an instance's children
// are created in the instance's own cluster.
//
// The exception is a hub graph: an RGD whose resources carry a target
// (`target: {cluster: {name: ...}}`, a fleetgraph extension). Its CRD and
// instances live on the hub, and each resource is written in the cluster
// its target names (on the hub when it has none), so one instance can put
// objects in several clusters and read values across them.
//
// Why this shape: a platform that serves many clusters wants one place to
// define and validate an API, and many places to run it, without installing
// and upgrading a controller in each cluster or giving up the RGD format its
// users already know.
//
// The packages, from the outside in:
//
//   - sdk: the front door. sdk.NewHub(provider, opts), Hub.RegisterGraph,
//     Hub.SetupWithManager, Hub.FleetStatus.
//   - sdk/apis/v1alpha1: the ResourceGraphDefinition types.
//   - sdk/graph: the compiler. graph.Compile turns an RGD into an immutable
//     *graph.Graph.
//   - hub: CRD fan-out and per-cluster fleet status, usable without the
//     compiler or the instance runtime: a hub.FanOut added to a
//     multicluster-runtime manager puts CRDs on every cluster and tells
//     where each stands; the interfaces a provider may implement
//     (ClusterLabeler, ClusterLabelNotifier, ClusterRegistry,
//     EngagementReporter, Publisher) are defined there, and LabelsFrom
//     gives a platform's own provider labels.
//   - spoke: the per-cluster instance runtime, usable without a hub: a
//     spoke.Runtime added to any (multicluster-)runtime manager serves the
//     compiled graphs it is given, for a platform with its own agent in
//     each cluster or whose CRDs arrive by GitOps.
//   - providers/secret, providers/clusterprofile, providers/capi,
//     providers/kcp: where clusters come from (kubeconfig Secrets,
//     ClusterProfiles, Cluster API Clusters, kcp workspaces);
//     providers/access: the one policy for what a cluster's description
//     may make the hub do.
//   - testing: fake clusters for unit tests and a real local fleet for
//     integration tests.
//
// Beside the packages: cmd/fleetgraph-hub (the reference hub binary) and
// cmd/fleetgraph (the command line), examples/ (runnable programs with
// tests), config/ (RBAC and Deployments for the hub), docs/ (the guides and
// reference) and hack/ (binary builds, codegen and kro as the test oracle,
// in modules of their own).
//
// A nil provider is single-cluster mode: the local cluster is both hub and the
// only spoke, through the same code.
package fleetgraph
