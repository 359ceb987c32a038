// Package krodiff uses kro v0.9.3 as a test oracle for fleetgraph's
// compiler.
//
// fleetgraph promises that ResourceGraphDefinitions written for kro apply
// unchanged. Hand-written expectations can only check what their author
// thought of; kro itself knows every rule. So this module feeds one corpus
// of RGDs (testdata/corpus) to both and compares what each does with it:
//
//   - admission: the RGD is created (dry run, strict field validation)
//     against each project's own ResourceGraphDefinition CRD, served by the
//     same kube-apiserver (fleetgraph's under a mirror group, since both
//     claim kro.run);
//   - compile: kro's graph builder and fleetgraph's graph.Compile, each
//     resolving child schemas from that same server;
//   - CRD: the generated CRD is created (dry run), because kro's builder
//     leaves some checks (defaults against their own schema, for one) to the
//     API server.
//
// An RGD is accepted when all three stages pass. Both must agree on
// accept/reject; for accepted RGDs the generated CRDs must be equal once
// fleetgraph's own bookkeeping labels are removed, and every resource must
// depend on the same resources. A disagreement is explained only by an entry
// in the one table of known differences (differences.go); everything else
// fails the test with a diff.
//
// It is a separate Go module so that the SDK never depends on kro.
package krodiff
