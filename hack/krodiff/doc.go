// Package krodiff uses kro v0.9.4 as a test oracle for fleetgraph.
//
// fleetgraph promises that ResourceGraphDefinitions written for kro apply
// unchanged and behave the same. Hand-written expectations can only check
// what their author thought of; kro itself knows every rule. So this module
// gives kro and fleetgraph the same inputs and compares what each does.
//
// # Compiling (TestCompileAgainstKro)
//
// The inputs are testdata/corpus and the RGDs of kro's own examples, read
// from kro's module. Each goes through, on one kube-apiserver:
//
//   - admission: the RGD is created (dry run, strict field validation)
//     against each project's own ResourceGraphDefinition CRD (fleetgraph's
//     under MirrorGroup, since both claim kro.run);
//   - compile: kro's graph builder and fleetgraph's graph.Compile, each
//     resolving child schemas from that same server;
//   - CRD: the generated CRD is created (dry run), because kro's builder
//     leaves some checks (defaults against their own schema, for one) to the
//     API server.
//
// An RGD is accepted when all three stages pass. Both must agree on
// accept/reject; for accepted RGDs the generated CRDs must be equal once
// fleetgraph's bookkeeping labels are removed, and every resource must
// depend on the same resources.
//
// rejections.md lists every way kro v0.9.4 can refuse an RGD (each error
// path of its admission, builder and CRD creation) with the corpus cases
// that take it; TestRejectionTableNamesCorpusFiles keeps it and the corpus
// in step. A corpus file fleetgraph refuses says, in "# names: " comment
// lines, what the refusal must name (the resource id or field path, and
// the offending expression, marker or value as written), and the compile
// comparison checks that it does (see NamingProblems).
//
// # Behaving (TestBehaviourAgainstKro)
//
// kro's controller (built by build-kro.sh) runs against one API server and
// fleetgraph's hub in single-cluster mode against another. Each case in
// testdata/behaviour (an RGD, an instance, objects to create first) is
// applied to both, a stand-in controller fills the status of the test's
// Widget kind on both, and the instance status (state, conditions, projected
// fields) and the children are compared once they settle.
//
// # Known differences
//
// Every difference is one line ("verdict: ...", "crd: <path>: kro X,
// fleetgraph Y", "status: ...", "child: ..."). A difference passes only when
// the input's entry in the tables of differences.go has a Kind whose
// pattern covers that line; an entry for an input that no longer differs
// fails too, so the tables stay true.
//
// It is a separate Go module so that the SDK never depends on kro.
package krodiff
