// Package schemas gives the fleetgraph command the OpenAPI schemas of child
// kinds without a cluster, so that `fleetgraph validate` type-checks
// templates offline as the hub does against its API server.
//
// Offline schemas come from two places: a snapshot of the OpenAPI v3
// documents Kubernetes serves for its built-in kinds (taken from a real
// kube-apiserver of the version the project tests against, descriptions
// removed), and CustomResourceDefinition manifests, turned into the
// documents an API server would publish for them with the API server's own
// builder. Both are served as a client-go openapi.Client, so the graph
// compiler reads them through the same resolver (sdk/graph/resolver) that
// reads a live cluster: a kind types the same offline as online.
package schemas
