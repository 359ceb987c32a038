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
	nullComparison = kind("comparing a typed field with null (job.status.completionTime != null in kro's job example): "+
		"kro accepts it, fleetgraph's type check finds no != for (string, null)",
		`^verdict: kro accepted; fleetgraph rejected at compile: .*found no matching overload for '_[!=]=_' applied to '\(\w+, null\)'`)
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
	{File: "kro/examples/kubernetes/job-example/rgd.yaml", Kinds: []Kind{nullComparison}},
}

// Kinds of behaviour difference.
var (
	conditionMessages = kind("the built-in conditions' messages are fleetgraph's own words "+
		"(kro: GraphResolved \"runtime graph created and all resources resolved\", InstanceManaged "+
		"\"instance is properly managed with finalizers and labels\", ResourcesReady \"all resources are created and ready\", "+
		"Ready \"\")",
		`^status: conditions\[\d+\]\.message: kro "(runtime graph created and all resources resolved|`+
			`instance is properly managed with finalizers and labels|all resources are created and ready|)", fleetgraph "[^"]+"$`)
	waitingCondition = kind("an instance waiting on a resource: kro reports ResourcesReady and Ready with reason NotReady and "+
		"\"resource reconciliation failed: ...\", fleetgraph with reason Waiting and what each resource waits for",
		`^status: conditions\[\d+\]\.(reason: kro "NotReady", fleetgraph "Waiting"|`+
			`message: kro "resource reconciliation failed: [^"]*(\\"[^"]*)*", fleetgraph "[^"]*waiting [^"]*")$`)
	selectorOrder = kind("an externalRef by selector: kro LISTs the matches from the API server, in its (namespace, name) order; "+
		"fleetgraph reads its cache, whose order varies between runs",
		`^(status: names\[\d+\]|child: ConfigMap/team-summary\.data\.names): `)
	customConditionsNotWritten = kind("custom status conditions: kro writes only the author's conditions to "+
		"status.conditions, fleetgraph compiles them but writes its built-in conditions instead",
		`^status: conditions: kro \[\{"message":"phase Running","reason":"WidgetState","status":"True","type":"WidgetReady"\}\], `+
			`fleetgraph \[\{"message":"every expression evaluated","reason":"Resolved","status":"True","type":"GraphResolved"\}`)
)

// KnownBehaviourDifferences is the table of behaviour differences from kro's
// controller that TestBehaviourAgainstKro accepts; File names a case in
// testdata/behaviour without ".yaml". As for KnownDifferences, an entry for
// a case on which both behave alike fails the test.
var KnownBehaviourDifferences = []KnownDifference{
	{File: "cel-libraries", Kinds: []Kind{conditionMessages}},
	{File: "chain", Kinds: []Kind{conditionMessages}},
	{File: "configmap-defaults", Kinds: []Kind{conditionMessages}},
	{File: "custom-conditions", Kinds: []Kind{customConditionsNotWritten}},
	{File: "externalref-missing", Kinds: []Kind{conditionMessages, waitingCondition}},
	{File: "externalref-name", Kinds: []Kind{conditionMessages}},
	{File: "externalref-selector", Kinds: []Kind{conditionMessages, selectorOrder}},
	{File: "foreach", Kinds: []Kind{conditionMessages}},
	{File: "foreach-cartesian", Kinds: []Kind{conditionMessages}},
	{File: "includewhen-false", Kinds: []Kind{conditionMessages}},
	{File: "includewhen-true", Kinds: []Kind{conditionMessages}},
	{File: "readywhen-never", Kinds: []Kind{conditionMessages, waitingCondition}},
	{File: "readywhen-satisfied", Kinds: []Kind{conditionMessages}},
	{File: "service-ports", Kinds: []Kind{conditionMessages}},
	{File: "status-collection", Kinds: []Kind{conditionMessages}},
	{File: "status-projections", Kinds: []Kind{conditionMessages}},
	{File: "string-templates", Kinds: []Kind{conditionMessages}},
	{File: "update/configmap-defaults", Kinds: []Kind{conditionMessages}},
	{File: "update/externalref-selector", Kinds: []Kind{conditionMessages, selectorOrder}},
	{File: "update/foreach-cartesian", Kinds: []Kind{conditionMessages}},
	{File: "update/foreach", Kinds: []Kind{conditionMessages}},
	{File: "update/includewhen-false", Kinds: []Kind{conditionMessages}},
	{File: "update/includewhen-true", Kinds: []Kind{conditionMessages}},
	{File: "update/status-collection", Kinds: []Kind{conditionMessages}},
	{File: "update/string-templates", Kinds: []Kind{conditionMessages}},
}
