// Package rollout decides which revision of a graph each cluster serves.
//
// Two inputs decide. Placement: a Go hook (sdk.Options.Rollouts.Placement) and a
// GraphRollout object's cluster selector, both over the labels the provider
// gives each cluster, and the PlacementDecision the GraphRollout may follow
// (decision.go: read live, kept when it cannot be read), say whether a
// cluster serves the graph at all; the Controller can publish that answer
// as a PlacementDecision of its own (publish.go).
// Rollout: a GraphRollout's ordered waves say when a new revision reaches a
// cluster; until its wave starts, a cluster keeps the revision it served.
//
// The decision lives here and nowhere else. The hub's gate asks Planner.Decide
// before it puts a revision's CRD on a cluster, and its fallback asks
// Planner.Placed before it serves an older revision there; the spoke runtime
// then keeps its own rule (a cluster switches only once the new revision's
// gate passes). The Controller moves rollouts forward: it watches the
// fleet's health through hooks, opens the next wave when the current one
// has been healthy for the soak time, stops a wave that misses its
// deadline, and asks the runtime to reconsider a cluster whose decision
// changed. Its state is the GraphRollout's status, so a hub that restarts
// picks a rollout up where it was.
//
// Two refinements keep their state there too. A wave with maxConcurrency
// (concurrency.go) lets its clusters take the target a few at a time: the
// status lists those moving and moved, and the plan lets exactly those
// take it. With onFailure: Rollback (rollback.go), a wave failed past its
// budget does not stop the rollout but takes the target back, wave by
// wave from the failed one to the first: the plan holds the target off
// the waves gone back, and the hub's fallback serves them the stable
// revision, as it does for a cluster that failed within its budget. A
// manual rollback in waves (manual.go: spec.rollbackTo with
// rollbackStrategy Waves) is a rollout of the older revision through the
// same waves, first wave first, with its own cursor in
// status.manualRollback; the runtime offers the older revision and the
// plan lets it reach a wave once the wave has started.
//
// Two things narrow a wave further. Holds (hold.go) pin clusters to the
// revision each served when the hold took it; the pin is kept in
// status.clusters, the Planner refuses every other revision there, and the
// rollout is stepped without the held clusters, so they neither hold a
// wave back nor spend its failure budget. Health gates (health.go) judge
// each instance on the revision being rolled out only: the ERRORs it
// found (maxErrorPercent) and a CEL condition over the instance, which the
// hub type-checks against every revision and evaluates within the graph's
// limits; one that does not compile refuses the rollout rather than
// letting it pass or fail on an expression that can never be true.
//
// A restarted hub (restart.go) decides by the stored status from its first
// decision: the Planner refuses every decision until the Controller has
// read the GraphRollouts, even when their CRD cannot be installed again,
// and the fallback serves a cluster the revision its CRD names only where
// the plan allows it there. The wave in progress counts the clusters the
// status lists and the hub has not engaged yet as unhealthy, for one
// progress deadline at most.
//
// A spec the hub could not number (its revision store failed) is one the
// rollout can neither judge nor roll back (unnumbered.go): under a
// GraphRollout it reaches no cluster on a numbered revision, and only the
// clusters where a new revision may go at once, until the hub records its
// number and it is rolled out like any other.
package rollout
