package krodiff

// KnownDifference is a corpus file on which fleetgraph knowingly differs
// from kro v0.9.3, and why.
type KnownDifference struct {
	// File is the corpus file name, e.g. "invalid-cycle.yaml".
	File string
	// Reason says what differs and why.
	Reason string
}

// Reasons shared by several files. Each names the difference as the test
// sees it: "kro ..., fleetgraph ...".
const (
	conditionsSchema = "status.conditions items: fleetgraph declares lastTransitionTime format date-time, " +
		"observedGeneration format int64 and requires type and status; kro declares neither format nor required"
	rootRequiresSpec = "fleetgraph requires spec at the root when spec has required fields; " +
		"kro does not, so kro's CRD admits an instance without spec"
	statusIntFormat      = "integer status fields: fleetgraph adds format int64, kro omits format"
	statusUntypedStrings = "a status field projecting a child object: its timestamp fields are untyped " +
		"(x-kubernetes-preserve-unknown-fields) in kro's CRD and type string in fleetgraph's"
	minGreaterThanMax = "minimum > maximum (or minLength > maxLength, minItems > maxItems): fleetgraph rejects a field " +
		"no value can satisfy; kro and the API server accept the CRD"
	forEachIdentity = "kro rejects a forEach whose template identity (name, namespace) does not use every iterator; " +
		"fleetgraph does not check this when compiling"
	bytesIntoString = "a bytes expression (hash.fnv64a) filling a string field: kro rejects the type mismatch, " +
		"fleetgraph accepts it and renders the bytes as a string"
	readyWhenBare = "a readyWhen entry without ${}: kro rejects it, fleetgraph accepts it"
	literalTypes  = "a literal template value of the wrong type (replicas: three): kro rejects it when compiling, " +
		"fleetgraph leaves literals to the API server, which rejects the object when it is applied"
	customConditions = "custom status conditions (runtime.newCondition, runtime.condition): kro supports them, " +
		"fleetgraph rejects status.conditions as reserved"
	numberAlias = "SimpleSchema type number: kro knows only float, fleetgraph accepts number as float's OpenAPI name"
)

// KnownDifferences is the one table of differences from kro that the test
// accepts. An entry for a file on which both agree fails the test too, so
// the table (and the README copied from it) never claims a difference that
// is gone.
var KnownDifferences = []KnownDifference{
	{File: "basic-configmap.yaml", Reason: conditionsSchema},
	{File: "cel-bindings.yaml", Reason: conditionsSchema},
	{File: "cel-encoders.yaml", Reason: conditionsSchema},
	{File: "cel-ext-lists.yaml", Reason: conditionsSchema},
	{File: "cel-hash.yaml", Reason: conditionsSchema},
	{File: "cel-json.yaml", Reason: conditionsSchema},
	{File: "cel-k8s-ip-cidr.yaml", Reason: conditionsSchema},
	{File: "cel-k8s-lists.yaml", Reason: conditionsSchema},
	{File: "cel-k8s-quantity.yaml", Reason: conditionsSchema},
	{File: "cel-k8s-semver.yaml", Reason: conditionsSchema},
	{File: "cel-k8s-url-regex.yaml", Reason: conditionsSchema},
	{File: "cel-lists-index.yaml", Reason: conditionsSchema},
	{File: "cel-macros-conversions.yaml", Reason: conditionsSchema},
	{File: "cel-map-merge.yaml", Reason: conditionsSchema},
	{File: "cel-optional-fields.yaml", Reason: conditionsSchema},
	{File: "cel-optional.yaml", Reason: conditionsSchema},
	{File: "cel-random.yaml", Reason: conditionsSchema},
	{File: "cel-string-template.yaml", Reason: conditionsSchema},
	{File: "cel-strings-ext.yaml", Reason: conditionsSchema},
	{File: "cel-two-var-comprehensions.yaml", Reason: conditionsSchema},
	{File: "edge-duplicate-objects.yaml", Reason: conditionsSchema},
	{File: "edge-id-too-long.yaml", Reason: conditionsSchema},
	{File: "edge-min-greater-than-max.yaml", Reason: minGreaterThanMax},
	{File: "edge-minitems-greater-than-maxitems.yaml", Reason: minGreaterThanMax},
	{File: "edge-minlength-greater-than-maxlength.yaml", Reason: minGreaterThanMax},
	{File: "invalid-foreach-without-iterator-use.yaml", Reason: forEachIdentity},
	{File: "invalid-hash-bytes-into-string.yaml", Reason: bytesIntoString},
	{File: "invalid-readywhen-not-expression.yaml", Reason: readyWhenBare},
	{File: "invalid-template-wrong-literal-type.yaml", Reason: literalTypes},
	{File: "marker-combined.yaml", Reason: conditionsSchema + "; " + rootRequiresSpec},
	{File: "marker-default-collections.yaml", Reason: conditionsSchema},
	{File: "marker-defaults.yaml", Reason: conditionsSchema},
	{File: "marker-description.yaml", Reason: conditionsSchema},
	{File: "marker-enum.yaml", Reason: conditionsSchema},
	{File: "marker-immutable.yaml", Reason: conditionsSchema + "; " + rootRequiresSpec},
	{File: "marker-items.yaml", Reason: conditionsSchema},
	{File: "marker-listmapkey.yaml", Reason: conditionsSchema},
	{File: "marker-listtype.yaml", Reason: conditionsSchema},
	{File: "marker-minimum-maximum.yaml", Reason: conditionsSchema},
	{File: "marker-pattern.yaml", Reason: conditionsSchema + "; " + rootRequiresSpec},
	{File: "marker-required.yaml", Reason: conditionsSchema + "; " + rootRequiresSpec},
	{File: "marker-string-length.yaml", Reason: conditionsSchema},
	{File: "marker-validation.yaml", Reason: conditionsSchema},
	{File: "resource-chain.yaml", Reason: conditionsSchema},
	{File: "resource-cluster-scoped-child.yaml", Reason: conditionsSchema},
	{File: "resource-custom-kind-template.yaml", Reason: conditionsSchema},
	{File: "resource-deployment-service.yaml", Reason: conditionsSchema},
	{File: "resource-diamond.yaml", Reason: conditionsSchema},
	{File: "resource-externalref-name-expression.yaml", Reason: conditionsSchema},
	{File: "resource-externalref-name.yaml", Reason: conditionsSchema},
	{File: "resource-externalref-readywhen.yaml", Reason: conditionsSchema},
	{File: "resource-externalref-selector-expressions.yaml", Reason: conditionsSchema},
	{File: "resource-externalref-selector.yaml", Reason: conditionsSchema + "; " + statusIntFormat},
	{File: "resource-foreach-cartesian.yaml", Reason: conditionsSchema},
	{File: "resource-foreach-depends.yaml", Reason: conditionsSchema},
	{File: "resource-foreach-includewhen.yaml", Reason: conditionsSchema},
	{File: "resource-foreach-map-keys.yaml", Reason: conditionsSchema},
	{File: "resource-foreach-objects.yaml", Reason: conditionsSchema},
	{File: "resource-foreach-readywhen-each.yaml", Reason: conditionsSchema},
	{File: "resource-foreach.yaml", Reason: conditionsSchema},
	{File: "resource-includewhen-resource.yaml", Reason: conditionsSchema},
	{File: "resource-includewhen.yaml", Reason: conditionsSchema},
	{File: "resource-int-or-string.yaml", Reason: conditionsSchema},
	{File: "resource-job-cronjob.yaml", Reason: conditionsSchema},
	{File: "resource-namespace-field.yaml", Reason: conditionsSchema},
	{File: "resource-quantity-field.yaml", Reason: conditionsSchema},
	{File: "resource-readywhen.yaml", Reason: conditionsSchema},
	{File: "resource-secret-stringdata.yaml", Reason: conditionsSchema},
	{File: "resource-whole-object-fields.yaml", Reason: conditionsSchema},
	{File: "schema-crd-metadata.yaml", Reason: conditionsSchema},
	{File: "schema-empty-spec.yaml", Reason: conditionsSchema},
	{File: "schema-group.yaml", Reason: conditionsSchema},
	{File: "schema-instance-metadata.yaml", Reason: conditionsSchema},
	{File: "schema-irregular-plural.yaml", Reason: conditionsSchema},
	{File: "schema-printer-columns.yaml", Reason: conditionsSchema},
	{File: "schema-scope-cluster.yaml", Reason: conditionsSchema},
	{File: "schema-version-beta.yaml", Reason: conditionsSchema},
	{File: "status-collection-projection.yaml", Reason: conditionsSchema + "; " + statusIntFormat},
	{File: "status-conditions-builtin.yaml", Reason: customConditions},
	{File: "status-conditions-child-condition.yaml", Reason: customConditions},
	{File: "status-conditions-custom.yaml", Reason: customConditions},
	{File: "status-conditions-per-item.yaml", Reason: customConditions},
	{File: "status-custom-type-child.yaml", Reason: conditionsSchema + "; " + statusIntFormat},
	{File: "status-from-schema.yaml", Reason: conditionsSchema + "; " + statusIntFormat},
	{File: "status-nested.yaml", Reason: conditionsSchema + "; " + statusIntFormat},
	{File: "status-projections.yaml", Reason: statusIntFormat + "; " + conditionsSchema + "; " + statusUntypedStrings},
	{File: "types-arrays.yaml", Reason: conditionsSchema},
	{File: "types-atomic.yaml", Reason: conditionsSchema},
	{File: "types-custom-array-required.yaml", Reason: conditionsSchema + "; " + rootRequiresSpec},
	{File: "types-custom-marker-on-type.yaml", Reason: conditionsSchema + "; " + rootRequiresSpec},
	{File: "types-custom-nested.yaml", Reason: conditionsSchema},
	{File: "types-custom.yaml", Reason: conditionsSchema},
	{File: "types-maps.yaml", Reason: conditionsSchema},
	{File: "types-nested-collections.yaml", Reason: conditionsSchema},
	{File: "types-nested-structure.yaml", Reason: conditionsSchema},
	{File: "types-number-keyword.yaml", Reason: numberAlias},
	{File: "types-object-unstructured.yaml", Reason: conditionsSchema},
}

// knownDifference returns file's entry in KnownDifferences.
func knownDifference(file string) (KnownDifference, bool) {
	for _, d := range KnownDifferences {
		if d.File == file {
			return d, true
		}
	}
	return KnownDifference{}, false
}
