package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// As in kro, a projected status field must read schema or a resource: a
// constant is refused, naming the field and the expression.
func TestStatusFieldsReadSchemaOrAResource(t *testing.T) {
	withStatus := func(status string) string {
		return "apiVersion: v1alpha1\nkind: App\nspec:\n  name: string\nstatus:\n" + indent(status, "  ")
	}
	res := "resources:\n" + cm("a", "", "")
	runFailCases(t, map[string]failCase{
		"a constant": {schema: withStatus(`version: ${"v1"}`), resources: res,
			kind: graph.ErrInvalid, want: `spec.schema.status.version: ${"v1"}: a status field must read schema or a resource`},
		"a constant in a string": {schema: withStatus(`version: "v-${string(1)}"`), resources: res,
			kind: graph.ErrInvalid, want: `spec.schema.status.version: v-${string(1)}: a status field must read schema or a resource`},
		"a constant in a list": {schema: withStatus(`list: ["${schema.spec.name}", "${'x'}"]`), resources: res,
			kind: graph.ErrInvalid, want: `spec.schema.status.list[1]: ${'x'}: a status field must read schema or a resource`},
	})
	for _, status := range []string{`version: "${schema.spec.name}"`, `cm: "${a.metadata.name}-${'x'}"`, `both: ${a.metadata.name + schema.spec.name}`} {
		_, err := graph.Compile(parseRGD(t, rgdDoc(withStatus(status), res)), graph.Options{})
		assert.NoError(t, err, status)
	}
}
