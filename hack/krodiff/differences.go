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
	duplicateObjects = kind("two resources rendering the same object (kind, namespace and name written alike, literally or through the same expressions, "+
		"with nothing in includeWhen to keep them apart): kro accepts the RGD and one resource's data is silently dropped, "+
		"fleetgraph rejects it naming both resources because both would fight over one object",
		`^verdict: kro accepted; fleetgraph rejected at compile: resource "[^"]+": metadata\.name: .*resource "[^"]+" already renders the same object`)
	longIDs = kind("resource ids longer than 63 characters: kro accepts them, fleetgraph rejects them "+
		"because the id is a label value on the objects it creates",
		`^verdict: kro accepted; fleetgraph rejected at compile: .*must be no more than 63 characters$`)
	readyWhenBare = kind("a readyWhen entry without ${}: kro rejects it, fleetgraph accepts it",
		`^verdict: kro rejected at compile: .*only standalone expressions are allowed.*; fleetgraph accepted$`)
	numberAlias = kind("SimpleSchema type number: kro knows only float, fleetgraph accepts number as float's OpenAPI name",
		`^verdict: kro rejected at compile: .*unknown type: number.*; fleetgraph accepted$`)
	yamlListType = kind("a type written as a YAML list [T]: kro rejects it, fleetgraph accepts it as an extension (listed in Graph.Extensions, refused under Strict)",
		`^verdict: kro rejected at compile: .*unexpected type: \[\]interface \{\}.*; fleetgraph accepted$`)
	clusterVariable = kind("the cluster variable (cluster.name, cluster.labels, cluster.values): kro rejects it as an undeclared reference, "+
		"fleetgraph accepts it as an extension (listed in Graph.Extensions, refused under Strict)",
		`^verdict: kro rejected at compile: .*references unknown identifiers: \[cluster\]; fleetgraph accepted$`)
	selectorExpression = kind("a label selector computed by one ${} expression: kro's RGD CRD rejects it at admission, "+
		"fleetgraph accepts it as an extension (listed in Graph.Extensions, refused under Strict)",
		`^verdict: kro rejected at admission: .*selector in body must be of type object.*; fleetgraph accepted$`)
	contradictoryMarkers = kind("markers that contradict each other (minimum above maximum, minLength above maxLength, minItems above maxItems, "+
		"bounds with no integer between them, an enum value the field's own bounds or pattern refuse): kro and the API server accept them "+
		"and serve a field no value (or that enum value) can ever satisfy, fleetgraph rejects them naming both markers",
		`^verdict: kro accepted; fleetgraph rejected at compile: spec\.schema\.spec\.\S+: invalid marker: (\S+ is greater than \S+: no \S+ can satisfy both|minimum=\S+ and maximum=\S+ leave no integer|enum value .* it can never be accepted)$`)
	meaninglessMarkers = kind("a bound that constrains nothing (minimum on a string, a negative minLength): kro and the API server accept it, "+
		"fleetgraph rejects it naming the marker",
		`^verdict: kro accepted; fleetgraph rejected at compile: spec\.schema\.spec\.\S+: invalid marker: (minimum|maximum|minLength|maxLength|minItems|maxItems)="[^"]*": (only for .* fields|not a non-negative integer)`)
	unterminatedExpression = kind("a ${ that is never closed: kro reads it as plain text, fleetgraph rejects it (it is almost always a typo)",
		`^verdict: kro accepted; fleetgraph rejected at compile: .*unterminated expression`)
	statusState = kind("a status projection named state: kro accepts it though its controller writes status.state itself, "+
		"fleetgraph rejects it because the runtime owns status.state",
		`^verdict: kro accepted; fleetgraph rejected at compile: spec\.schema\.status\.state: .*status\.state is reserved for the runtime$`)
	externalCollectionReadyWhen = kind("readyWhen on an externalRef by selector: kro refuses each there and accepts the id as a list, "+
		"but its controller evaluates that readyWhen with only each bound, so neither works on kro; fleetgraph reads each item as each, as for forEach",
		`^verdict: kro (rejected at compile: .*readyWhen: references unknown identifiers: \[each\].*; fleetgraph accepted|accepted; fleetgraph rejected at compile: .*readyWhen may only reference each, not .*)$`)
)

// KnownDifferences is the one table of compile-level differences from kro
// that TestCompileAgainstKro accepts. An entry for a file on which both
// agree fails the test too, so the table (and the README copied from it)
// never claims a difference that is gone.
var KnownDifferences = []KnownDifference{
	{File: "edge-bound-on-string.yaml", Kinds: []Kind{meaninglessMarkers}},
	{File: "edge-duplicate-objects-expression.yaml", Kinds: []Kind{duplicateObjects}},
	{File: "edge-duplicate-objects.yaml", Kinds: []Kind{duplicateObjects}},
	{File: "edge-enum-outside-bounds.yaml", Kinds: []Kind{contradictoryMarkers}},
	{File: "edge-enum-outside-pattern.yaml", Kinds: []Kind{contradictoryMarkers}},
	{File: "edge-externalref-collection-readywhen-each.yaml", Kinds: []Kind{externalCollectionReadyWhen}},
	{File: "edge-externalref-collection-readywhen-id.yaml", Kinds: []Kind{externalCollectionReadyWhen}},
	{File: "edge-externalref-selector-expression.yaml", Kinds: []Kind{selectorExpression}},
	{File: "edge-id-too-long.yaml", Kinds: []Kind{longIDs}},
	{File: "edge-min-greater-than-max.yaml", Kinds: []Kind{contradictoryMarkers}},
	{File: "edge-minitems-greater-than-maxitems.yaml", Kinds: []Kind{contradictoryMarkers}},
	{File: "edge-minlength-greater-than-maxlength.yaml", Kinds: []Kind{contradictoryMarkers}},
	{File: "edge-negative-length.yaml", Kinds: []Kind{meaninglessMarkers}},
	{File: "edge-no-integer-between-bounds.yaml", Kinds: []Kind{contradictoryMarkers}},
	{File: "edge-status-state.yaml", Kinds: []Kind{statusState}},
	{File: "edge-unterminated-expression.yaml", Kinds: []Kind{unterminatedExpression}},
	{File: "ext-cluster-variable.yaml", Kinds: []Kind{clusterVariable}},
	{File: "invalid-readywhen-not-expression.yaml", Kinds: []Kind{readyWhenBare}},
	{File: "types-number-keyword.yaml", Kinds: []Kind{numberAlias}},
	{File: "types-yaml-list-custom-type.yaml", Kinds: []Kind{yamlListType}},
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
