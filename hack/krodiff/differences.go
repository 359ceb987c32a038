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
	conditionsSchema = kind("status.conditions items: fleetgraph declares lastTransitionTime format date-time, "+
		"observedGeneration format int64 and requires type and status; kro declares neither format nor required",
		`^crd: spec\.versions\[0\]\.schema\.openAPIV3Schema\.properties\.status\.properties\.conditions\.items\.`+
			`(required|properties\.(lastTransitionTime|observedGeneration)\.format): kro absent, `)
	rootRequiresSpec = kind("fleetgraph requires spec at the root when spec has required fields; "+
		"kro does not, so kro's CRD admits an instance without spec",
		`^crd: spec\.versions\[0\]\.schema\.openAPIV3Schema\.required: kro absent, fleetgraph \["spec"\]$`)
	statusIntFormat = kind("integer status fields: fleetgraph adds format int64, kro omits format",
		`^crd: \S*openAPIV3Schema\.properties\.status\.\S*\.format: kro absent, fleetgraph "int64"$`)
	statusUntypedStrings = kind("a status field projecting a child object: its timestamp fields are untyped "+
		"(x-kubernetes-preserve-unknown-fields) in kro's CRD and type string in fleetgraph's",
		`^crd: \S*properties\.status\.\S*\.(x-kubernetes-preserve-unknown-fields: kro true, fleetgraph absent|type: kro absent, fleetgraph "string")$`)
	minGreaterThanMax = kind("minimum > maximum (or minLength > maxLength, minItems > maxItems): fleetgraph rejects a field "+
		"no value can satisfy; kro and the API server accept the CRD",
		`^verdict: kro accepted; fleetgraph rejected at compile: .* is greater than max`)
	forEachIdentity = kind("kro rejects a forEach whose template identity (name, namespace) does not use every iterator; "+
		"fleetgraph does not check this when compiling",
		`^verdict: kro rejected at compile: .*all forEach dimensions must be used .*; fleetgraph accepted$`)
	bytesIntoString = kind("a bytes expression (hash.fnv64a) filling a string field: kro rejects the type mismatch, "+
		"fleetgraph accepts it and renders the bytes as a string",
		`^verdict: kro rejected at compile: .*returns type "bytes" but expected "string".*; fleetgraph accepted$`)
	readyWhenBare = kind("a readyWhen entry without ${}: kro rejects it, fleetgraph accepts it",
		`^verdict: kro rejected at compile: .*only standalone expressions are allowed.*; fleetgraph accepted$`)
	literalTypes = kind("a literal template value of the wrong type (replicas: three): kro rejects it when compiling, "+
		"fleetgraph leaves literals to the API server, which rejects the object when it is applied",
		`^verdict: kro rejected at compile: .*expected integer type for path .*; fleetgraph accepted$`)
	customConditions = kind("custom status conditions (runtime.newCondition, runtime.condition): kro supports them, "+
		"fleetgraph rejects status.conditions as reserved",
		`^verdict: kro accepted; fleetgraph rejected at compile: .*status\.conditions`)
	numberAlias = kind("SimpleSchema type number: kro knows only float, fleetgraph accepts number as float's OpenAPI name",
		`^verdict: kro rejected at compile: .*unknown type: number.*; fleetgraph accepted$`)
)

// KnownDifferences is the one table of compile-level differences from kro
// that TestCompileAgainstKro accepts. An entry for a file on which both
// agree fails the test too, so the table (and the README copied from it)
// never claims a difference that is gone.
var KnownDifferences = []KnownDifference{
	{File: "basic-configmap.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-bindings.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-encoders.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-ext-lists.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-hash.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-json.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-k8s-ip-cidr.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-k8s-lists.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-k8s-quantity.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-k8s-semver.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-k8s-url-regex.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-lists-index.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-macros-conversions.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-map-merge.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-optional-fields.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-optional.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-random.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-string-template.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-strings-ext.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "cel-two-var-comprehensions.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "edge-duplicate-objects.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "edge-id-too-long.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "edge-min-greater-than-max.yaml", Kinds: []Kind{minGreaterThanMax}},
	{File: "edge-minitems-greater-than-maxitems.yaml", Kinds: []Kind{minGreaterThanMax}},
	{File: "edge-minlength-greater-than-maxlength.yaml", Kinds: []Kind{minGreaterThanMax}},
	{File: "invalid-foreach-without-iterator-use.yaml", Kinds: []Kind{forEachIdentity}},
	{File: "invalid-hash-bytes-into-string.yaml", Kinds: []Kind{bytesIntoString}},
	{File: "invalid-readywhen-not-expression.yaml", Kinds: []Kind{readyWhenBare}},
	{File: "invalid-template-wrong-literal-type.yaml", Kinds: []Kind{literalTypes}},
	{File: "marker-combined.yaml", Kinds: []Kind{conditionsSchema, rootRequiresSpec}},
	{File: "marker-default-collections.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "marker-defaults.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "marker-description.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "marker-enum.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "marker-immutable.yaml", Kinds: []Kind{conditionsSchema, rootRequiresSpec}},
	{File: "marker-items.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "marker-listmapkey.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "marker-listtype.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "marker-minimum-maximum.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "marker-pattern.yaml", Kinds: []Kind{conditionsSchema, rootRequiresSpec}},
	{File: "marker-required.yaml", Kinds: []Kind{conditionsSchema, rootRequiresSpec}},
	{File: "marker-string-length.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "marker-validation.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-chain.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-cluster-scoped-child.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-custom-kind-template.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-deployment-service.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-diamond.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-externalref-name-expression.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-externalref-name.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-externalref-readywhen.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-externalref-selector-expressions.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-externalref-selector.yaml", Kinds: []Kind{conditionsSchema, statusIntFormat}},
	{File: "resource-foreach-cartesian.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-foreach-depends.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-foreach-includewhen.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-foreach-map-keys.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-foreach-objects.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-foreach-readywhen-each.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-foreach.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-includewhen-resource.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-includewhen.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-int-or-string.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-job-cronjob.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-namespace-field.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-quantity-field.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-readywhen.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-secret-stringdata.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "resource-whole-object-fields.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "schema-crd-metadata.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "schema-empty-spec.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "schema-group.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "schema-instance-metadata.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "schema-irregular-plural.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "schema-printer-columns.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "schema-scope-cluster.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "schema-version-beta.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "status-collection-projection.yaml", Kinds: []Kind{conditionsSchema, statusIntFormat}},
	{File: "status-conditions-builtin.yaml", Kinds: []Kind{customConditions}},
	{File: "status-conditions-child-condition.yaml", Kinds: []Kind{customConditions}},
	{File: "status-conditions-custom.yaml", Kinds: []Kind{customConditions}},
	{File: "status-conditions-per-item.yaml", Kinds: []Kind{customConditions}},
	{File: "status-custom-type-child.yaml", Kinds: []Kind{conditionsSchema, statusIntFormat}},
	{File: "status-from-schema.yaml", Kinds: []Kind{conditionsSchema, statusIntFormat}},
	{File: "status-nested.yaml", Kinds: []Kind{conditionsSchema, statusIntFormat}},
	{File: "status-projections.yaml", Kinds: []Kind{statusIntFormat, conditionsSchema, statusUntypedStrings}},
	{File: "types-arrays.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "types-atomic.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "types-custom-array-required.yaml", Kinds: []Kind{conditionsSchema, rootRequiresSpec}},
	{File: "types-custom-marker-on-type.yaml", Kinds: []Kind{conditionsSchema, rootRequiresSpec}},
	{File: "types-custom-nested.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "types-custom.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "types-maps.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "types-nested-collections.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "types-nested-structure.yaml", Kinds: []Kind{conditionsSchema}},
	{File: "types-number-keyword.yaml", Kinds: []Kind{numberAlias}},
	{File: "types-object-unstructured.yaml", Kinds: []Kind{conditionsSchema}},
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
	selectorOrder = kind("an externalRef by selector: kro lists the matches sorted by name, fleetgraph in its cache's order",
		`^(status: names\[\d+\]|child: ConfigMap/team-summary\.data\.names): `)
	customConditionsUnserved = kind("custom status conditions: fleetgraph rejects the RGD (see the compile table), "+
		"so its kind is never served",
		`^error: fleetgraph: creating the instance: the server could not find the requested resource$`)
)

// KnownBehaviourDifferences is the table of behaviour differences from kro's
// controller that TestBehaviourAgainstKro accepts; File names a case in
// testdata/behaviour without ".yaml". As for KnownDifferences, an entry for
// a case on which both behave alike fails the test.
var KnownBehaviourDifferences = []KnownDifference{
	{File: "cel-libraries", Kinds: []Kind{conditionMessages}},
	{File: "chain", Kinds: []Kind{conditionMessages}},
	{File: "configmap-defaults", Kinds: []Kind{conditionMessages}},
	{File: "custom-conditions", Kinds: []Kind{customConditionsUnserved}},
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
}
