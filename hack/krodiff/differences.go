package krodiff

import (
	"regexp"
	"strings"
)

// Kind is one kind of known difference: why it exists, and which
// difference lines (as Difference and SnapshotDiff write them) it covers.
type Kind struct {
	Why   string
	Lines *regexp.Regexp
}

func kind(why, lines string) Kind { return Kind{Why: why, Lines: regexp.MustCompile(lines)} }

// KnownDifference is a corpus file (or behaviour case) on which fleetgraph
// knowingly differs from kro v0.9.3. Every difference found on it must be
// covered by one of its Kinds.
type KnownDifference struct {
	// File is the corpus file name, e.g. "invalid-cycle.yaml", or the
	// behaviour case name, e.g. "foreach".
	File  string
	Kinds []Kind
}

// Reason says why the file differs.
func (d KnownDifference) Reason() string {
	whys := make([]string, len(d.Kinds))
	for i, k := range d.Kinds {
		whys[i] = k.Why
	}
	return strings.Join(whys, "; ")
}

// uncovered returns the lines no Kind of d covers.
func (d KnownDifference) uncovered(lines []string) []string {
	var out []string
	for _, l := range lines {
		covered := false
		for _, k := range d.Kinds {
			covered = covered || k.Lines.MatchString(l)
		}
		if !covered {
			out = append(out, l)
		}
	}
	return out
}

func lookup(table []KnownDifference, file string) (KnownDifference, bool) {
	for _, d := range table {
		if d.File == file {
			return d, true
		}
	}
	return KnownDifference{}, false
}

// Kinds of compile-level difference. Each Why reads "kro ..., fleetgraph ...".
var (
	duplicateObjects = kind("two resources rendering the same object (kind, namespace and literal name): "+
		"kro accepts the RGD, fleetgraph rejects it because both would fight over one object",
		`^verdict: kro accepted; fleetgraph rejected at compile: .*already renders the same object`)
	longIDs = kind("resource ids longer than 63 characters: kro accepts them, fleetgraph rejects them "+
		"because the id is a label value on the objects it creates",
		`^verdict: kro accepted; fleetgraph rejected at compile: .*must be no more than 63 characters$`)
	readyWhenBare = kind("a readyWhen entry without ${}: kro rejects it, fleetgraph accepts it",
		`^verdict: kro rejected at compile: .*only standalone expressions are allowed.*; fleetgraph accepted$`)
	numberAlias = kind("SimpleSchema type number: kro knows only float, fleetgraph accepts number as float's OpenAPI name",
		`^verdict: kro rejected at compile: .*unknown type: number.*; fleetgraph accepted$`)
)

// KnownDifferences is the one table of compile-level differences from kro
// that TestCompileAgainstKro accepts. An entry for a file on which both
// agree fails the test too, so the table (and the README copied from it)
// never claims a difference that is gone.
var KnownDifferences = []KnownDifference{
	{File: "edge-duplicate-objects.yaml", Kinds: []Kind{duplicateObjects}},
	{File: "edge-id-too-long.yaml", Kinds: []Kind{longIDs}},
	{File: "invalid-readywhen-not-expression.yaml", Kinds: []Kind{readyWhenBare}},
	{File: "types-number-keyword.yaml", Kinds: []Kind{numberAlias}},
}

// Kinds of behaviour difference.
var (
	waitingCondition = kind("an instance waiting on a resource: both report ResourcesReady and Ready with reason NotReady; "+
		"kro's message is \"resource reconciliation failed: ...\", fleetgraph's says what each resource waits for",
		`^status: conditions\[\d+\]\.message: kro "resource reconciliation failed: [^"]*(\\"[^"]*)*", fleetgraph "[^"]*waiting [^"]*"$`)
)

// KnownBehaviourDifferences is the table of behaviour differences from kro's
// controller that TestBehaviourAgainstKro accepts; File names a case in
// testdata/behaviour without ".yaml". As for KnownDifferences, an entry for
// a case on which both behave alike fails the test.
var KnownBehaviourDifferences = []KnownDifference{
	{File: "externalref-missing", Kinds: []Kind{waitingCondition}},
	{File: "readywhen-never", Kinds: []Kind{waitingCondition}},
}
