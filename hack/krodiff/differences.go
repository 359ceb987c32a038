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
// knowingly differs from kro v0.9.4. Every difference found on it must be
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
	longIDs = kind("resource ids longer than 63 characters: kro accepts the RGD, but it labels every child with the id "+
		"(kro.run/node-id), so the API server refuses each of its children and no instance ever works; "+
		"fleetgraph, which labels them too, refuses the RGD",
		`^verdict: kro accepted; fleetgraph rejected at compile: .*must be no more than 63 characters$`)
	readyWhenBare = kind("a readyWhen entry without ${}: kro rejects it, fleetgraph accepts it as an extension (listed in Graph.Extensions, refused under Strict)",
		`^verdict: kro rejected at compile: .*only standalone expressions are allowed.*; fleetgraph accepted$`)
	numberAlias = kind("SimpleSchema type number: kro knows only float, fleetgraph accepts number as float's OpenAPI name",
		`^verdict: kro rejected at compile: .*unknown type: number.*; fleetgraph accepted$`)
	yamlListType = kind("a type written as a YAML list [T]: kro rejects it, fleetgraph accepts it as an extension (listed in Graph.Extensions, refused under Strict)",
		`^verdict: kro rejected at compile: .*unexpected type: \[\]interface \{\}.*; fleetgraph accepted$`)
	optionalInTemplate = kind("an optional value (a.?b) inside a longer string: kro type-checks the template as one concatenation, "+
		"where string + optional has no overload, and rejects it; fleetgraph writes the value, or nothing when there is none, "+
		"as an extension (listed in Graph.Extensions, refused under Strict)",
		`^verdict: kro rejected at compile: .*no matching overload for '_\+_' applied to '\(string, optional_type.*; fleetgraph accepted$`)
	clusterVariable = kind("the cluster variable (cluster.name, cluster.labels, cluster.values): kro rejects it as an undeclared reference, "+
		"fleetgraph accepts it as an extension (listed in Graph.Extensions, refused under Strict)",
		`^verdict: kro rejected at compile: .*references unknown identifiers: \[cluster\]; fleetgraph accepted$`)
	target = kind("a target on a resource or the RGD (resources written in other clusters, KREP-012/013's shape), and the fleet variable "+
		"such graphs may read: kro v0.9.4's RGD CRD has no target field, fleetgraph accepts them as extensions (listed in Graph.Extensions, refused under Strict)",
		`^verdict: kro rejected at admission: .*unknown field "spec\.(resources\[\d+\]\.)?target".*; fleetgraph accepted$`)
	openObjectInStatus = kind("a status field projecting an object whose schema keeps unknown fields (a child's free-form field, "+
		"or a whole stub kind's status): kro's CRD types it as a bare object, so the API server prunes every field of it when the status is written; "+
		"fleetgraph's keeps them (an object of any values)",
		`^crd: spec\.versions\[0\]\.schema\.openAPIV3Schema\.properties\.status\.properties\.\S+\.additionalProperties: kro absent, fleetgraph \{"x-kubernetes-preserve-unknown-fields":true\}$`)
	externalCollectionReadyWhen = kind("readyWhen on an externalRef by selector: kro refuses each there and accepts the id as a list, "+
		"but its controller evaluates that readyWhen with only each bound, so neither works on kro; fleetgraph reads each item as each, as for forEach "+
		"(listed in Graph.Extensions, refused under Strict)",
		`^verdict: kro (rejected at compile: .*readyWhen: references unknown identifiers: \[each\].*; fleetgraph accepted|accepted; fleetgraph rejected at compile: .*readyWhen may only reference each, not .*)$`)
)

// KnownDifferences is the one table of compile-level differences from kro
// that TestCompileAgainstKro accepts. An entry for a file on which both
// agree fails the test too, so the table (and the README copied from it)
// never claims a difference that is gone.
var KnownDifferences = []KnownDifference{
	{File: "edge-externalref-collection-readywhen-each.yaml", Kinds: []Kind{externalCollectionReadyWhen}},
	{File: "edge-externalref-collection-readywhen-id.yaml", Kinds: []Kind{externalCollectionReadyWhen}},
	{File: "edge-id-too-long.yaml", Kinds: []Kind{longIDs}},
	{File: "ext-cluster-variable.yaml", Kinds: []Kind{clusterVariable}},
	{File: "ext-target.yaml", Kinds: []Kind{target}},
	{File: "ext-fleet-variable.yaml", Kinds: []Kind{target}},
	{File: "ext-optional-in-string-template.yaml", Kinds: []Kind{optionalInTemplate}},
	{File: "invalid-readywhen-not-expression.yaml", Kinds: []Kind{readyWhenBare}},
	{File: "status-list-of-open-objects.yaml", Kinds: []Kind{openObjectInStatus}},
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

// PublicDifferences is the table of compile-level differences from kro on
// the public corpus (TestCompileAgainstKroOnPublicRGDs); File names an RGD
// as PublicRGDs names it ("public/<file>", "#n" for the n-th of a file).
// Its entries are checked only where the corpus is present.
var PublicDifferences = []KnownDifference{
	{File: "public/koksay_gitopscon-kro-demo__clusters_kind_resourcegraphdefinitions_rgd-webapp.yaml", Kinds: []Kind{optionalInTemplate}},
	{File: "public/sojoner_kro-lab__deploy_platform-mvp_chart_hub_templates_kro-rgd.yaml", Kinds: []Kind{openObjectInStatus}},
}
