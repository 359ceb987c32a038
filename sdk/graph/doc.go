// Package graph compiles a ResourceGraphDefinition into an immutable Graph:
// the generated CRD, the resources in dependency order and their CEL
// programs, type-checked once so that reconciling an instance never parses
// or compiles.
//
// # Why compile
//
// An RGD is data written by people: SimpleSchema strings, templates full of
// ${} expressions, conditions. Every mistake in it (a misspelt field, a
// string where an integer belongs, two resources waiting on each other) is
// cheaper to report once, when the RGD is registered, with the resource id,
// field path and expression in the message, than on every reconcile of every
// instance in every cluster. Compile does all the checking; the spoke
// runtime only evaluates.
//
// # What Compile checks
//
//   - spec.schema: kind, version, group, scope; SimpleSchema (types and
//     markers) converted to OpenAPI v3 for the generated CRD, markers no
//     value can meet (minimum above maximum, an enum value the field's own
//     bounds refuse...) kept as kro keeps them, with a Graph.Warnings entry;
//   - resources: ids (lowerCamelCase, unique, not reserved), exactly one of
//     template and externalRef, apiVersion/kind/metadata in templates, no
//     kro.run/ or internal.kro.run/ labels or annotations, label selectors
//     shaped and valid as kro v0.9.4 requires;
//   - expressions: every ${} is parsed and type-checked against the
//     instance schema and, given a SchemaResolver, the schema of each
//     referenced kind, typed as kro and the API server type it (a string
//     of format date-time or date is a timestamp, duration a duration, byte
//     bytes; the runtime parses such strings before an expression reads
//     them); a value that is a single expression keeps its type
//     and must fit the field it fills, object by object and field by field
//     as kro checks it; readyWhen reads only its own resource (a
//     collection's, each item as each); includeWhen and readyWhen return
//     bools; forEach returns lists; a status field reads schema or a
//     resource;
//   - dependencies: taken from the expressions' syntax trees, ordered
//     topologically (ties in source order), cycles reported as a -> b -> a;
//   - what the API server would refuse when the CRD is applied: the
//     generated CRD goes through the API server's own CRD validation, so a
//     validation= rule that does not compile or a default outside its
//     bounds is reported against the RGD;
//   - kro's rules on identities: every forEach iterator in the name or the
//     namespace (in a hub graph the target counts too, so one object per
//     cluster may have the same name everywhere), two resources rendering
//     the same object (kind, and name and namespace written alike, literally
//     or through the same expressions, and in a hub graph targets written
//     alike) accepted as kro accepts them, with a Graph.Warnings entry, and
//     refused under Options.RefuseSameObjects unless includeWhen may keep
//     them apart, and, given a resolver
//     that is also a ScopeResolver, no namespace on a cluster-scoped child
//     and a namespace on a namespaced child of a cluster-scoped instance.
//
// # kro compatibility
//
// Compile accepts the RGDs kro v0.9.4 accepts and generates the same CRD,
// with kro's CEL libraries (random, hash, json, merge, list editing, custom
// status conditions with runtime.newCondition) in the versions kro uses.
// Beyond kro it accepts a few extensions (more CEL libraries, the number
// type, YAML [T] lists...): Graph.Extensions lists each use, and
// Options.Strict refuses them, for RGDs that must also run on kro.
//
// One extension is a variable: cluster, the cluster a graph is served on
// (cluster.name, cluster.labels as the provider gives them, and
// cluster.values, a map(string, dyn) of the values the platform gives the
// graph there), typed like schema and usable wherever schema is; the keys
// of cluster.values are not known at compile, so a key that may be absent
// is read with the optional syntax or has(). Graph.UsesCluster tells a
// runtime whether to bind it, and which of labels and values the graph
// reads (Cluster.Value, ClusterValue). kro does not reserve the
// word, so an RGD whose resource or forEach iterator is named cluster
// keeps kro's meaning and gets no variable.
//
// Another is a target (target.go): `target: {cluster: {name: ...}}` on a
// resource, or spec.target as the default, sends the resource to another
// cluster, making the graph a hub graph (Graph.IsHubGraph) that a runtime
// on the hub serves. Targets read only schema, the fleet variable
// (fleet.clusters, the engaged clusters the runtime lets the instance use,
// for hub graphs only; see
// FleetValue) and the resource's forEach iterators, so Node.ResolveTarget
// gives every target of an instance before anything is written.
//
// # Evaluating
//
// The Graph's methods (Graph.Status, Node.Included, Node.Iterations,
// Node.Render, Node.Ref, Node.Ready) evaluate, under a context, against Values: the instance
// under "schema", each observed resource under its id, and the cluster
// under "cluster" (absent: the cluster named "" with no labels or values). An expression that
// needs a resource not observed yet returns an error wrapping ErrPending,
// which means "wait", not "fail".
//
// # Bounds
//
// A platform runs one hub for many tenants, and an instance is a tenant's
// input: every evaluation is bounded by the graph's Limits (Options.Limits,
// Graph.Limits), and an evaluation stopped by one returns an *Error
// wrapping ErrLimit that names the resource, the path, the expression (cut
// to Limits.MaxMessageExpression characters) and the limit.
//
//   - Every function call is priced from its arguments before it runs: a
//     function whose output grows with its inputs (random strings,
//     lists.range, replace, join, format, json.marshal, merge, +...) is
//     refused when its output would pass Limits.MaxValueBytes, since Go's
//     out-of-memory cannot be recovered, and one whose time grows with the
//     product of its inputs (indexOf, distinct, sets.*, regexes, sort...)
//     is charged that product.
//   - Each evaluation is metered: comprehension steps and call prices are
//     counted against Limits.ExpressionCost, and the clock against
//     Limits.ExpressionTimeout. The meter is ours, not cel-go's runtime cost
//     tracker, whose bookkeeping is searched at every step of a
//     comprehension (a stack of the values it observed, which comprehension
//     steps never pop), so tracked evaluation is quadratic in a
//     comprehension's length: 30 s for xs.all(...) over 1e5 items, 27 ms
//     untracked, in cel-go v0.28.1 to v0.32.0.
//   - Every evaluation method takes a context; a Budget carried by it
//     (WithBudget) is shared by all evaluations of one reconcile of one
//     instance: Limits.InstanceCost, InstanceTimeout, MaxChildren and
//     MaxRenderedBytes. Graph.Status is bounded by Limits.MaxStatusBytes.
//   - Compile prices every expression with cel-go's estimator and the
//     instance schema's maxLength/maxItems/maxProperties. As kro refuses no
//     expression for its cost, an estimate above EstimatedCostWarning is a
//     Graph.Warnings entry naming the values that lack a bound; only a
//     platform that sets Limits.MaxExpressionEstimatedCost refuses it.
//   - What an RGD makes Compile build is bounded too, and a refusal is an
//     *Error wrapping ErrLimit and ErrSchema. Custom types are expanded at
//     every use, so a type made of two copies of the previous one doubles
//     at each level: uses share the type's schema while their properties,
//     bytes and depth are counted, and only a schema within
//     Limits.MaxSchemaProperties and MaxCRDBytes is copied (see
//     simpleschema.Bounds). The status schema inferred from expression
//     types counts against the same property limit, and the generated CRD
//     is held to MaxCRDBytes of JSON, what an API server stores.
//     CompileContext stops a compile between resources.
//
// Graph.CheckSchemas type-checks a compiled graph again against another
// cluster's schemas, so the hub can tell whether a spoke serves the child
// kinds as the cluster it compiled against does.
//
// The package does no I/O except through a SchemaResolver; see the resolver
// subpackage for one that reads a cluster's OpenAPI through discovery.
package graph
