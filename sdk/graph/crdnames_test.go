package graph_test

import (
	"testing"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// What the API server would refuse in the generated CRD is reported at the
// RGD's own field, with the offending value.
func TestCRDErrorsNameTheRGDField(t *testing.T) {
	schema := func(extra string) string {
		return "apiVersion: v1alpha1\nkind: App\n" + extra + "\nspec:\n  name: string"
	}
	runFailCases(t, map[string]failCase{
		"a printer column type": {schema: schema("additionalPrinterColumns: [{name: X, type: nonsense, jsonPath: .spec.name}]"), resources: "resources: []",
			kind: graph.ErrSchema, want: `spec.schema.additionalPrinterColumns[0].type: Invalid value "nonsense": must be one of boolean,date,integer,number,string`},
		"a CRD label": {schema: schema("metadata: {labels: {'bad label': x}}"), resources: "resources: []",
			kind: graph.ErrSchema, want: `spec.schema.metadata.labels: Invalid value "bad label": name part must consist of alphanumeric characters`},
	})
}
