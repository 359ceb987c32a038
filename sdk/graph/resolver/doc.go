// Package resolver supplies graph.Compile with the OpenAPI schemas of the
// kinds a ResourceGraphDefinition creates or reads, from a live cluster.
//
// Compile type-checks every expression that reads a child resource against
// that kind's schema, and checks template fields against it too. The schemas
// come from the API server's OpenAPI v3 documents, one per group-version,
// fetched through discovery. They are large (the core group is over a
// megabyte) and change rarely, so a Resolver fetches each document once and
// keeps it for a while; a kind missing from a cached document triggers a
// refetch, because a CRD may just have been installed.
//
// A fetch holds no lock: a group-version the server is slow to document,
// or answers with server errors for a while (retried for up to
// Options.RetryFor), delays only the callers that need it, and those share
// the one fetch. WithContext bounds the waits by a context, so a compile
// that is abandoned stops waiting for the server.
//
//	res, err := resolver.NewForConfig(cfg, resolver.Options{})
//	g, err := graph.Compile(rgd, graph.Options{Resolver: res})
package resolver
