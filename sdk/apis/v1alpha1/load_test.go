package v1alpha1_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

const twoRGDs = `# a comment before the first document
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: first
spec:
  schema:
    apiVersion: v1alpha1
    kind: First
    spec:
      enabled: boolean | default=true
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      anything: goes in a template
      immutable: yes
---
---
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: second
spec:
  schema:
    apiVersion: v1alpha1
    kind: Second
`

// Every RGD of a multi-document stream is read; empty documents are
// skipped; the free-form parts keep what they hold.
func TestLoadReadsEveryDocument(t *testing.T) {
	rgds, err := v1alpha1.Load(strings.NewReader(twoRGDs))
	require.NoError(t, err)
	require.Len(t, rgds, 2)
	assert.Equal(t, "first", rgds[0].Name)
	assert.Equal(t, "First", rgds[0].Spec.Schema.Kind)
	assert.JSONEq(t, `{"enabled":"boolean | default=true"}`, string(rgds[0].Spec.Schema.Spec.Raw))
	assert.Contains(t, string(rgds[0].Spec.Resources[0].Template.Raw), `"anything":"goes in a template"`)
	assert.Contains(t, string(rgds[0].Spec.Resources[0].Template.Raw), `"immutable":true`,
		"values mean what they mean to kubectl: YAML 1.1's yes is true")
	assert.Equal(t, "second", rgds[1].Name)
}

// What is wrong is refused with the line, the field and the document.
func TestLoadIsStrict(t *testing.T) {
	second := strings.Count(twoRGDs[:strings.Index(twoRGDs, "name: second")], "\n") + 1
	for name, tc := range map[string]struct {
		in    string
		line  int
		field string
		says  string
	}{
		"a misspelt field": {
			in:   strings.Replace(twoRGDs, "  resources:", "  resource:", 1),
			line: 12, field: "spec.resource", says: "unknown field",
		},
		"a misspelt field in a list item": {
			in:   strings.Replace(twoRGDs, "    template:", "    templat:", 1),
			line: 14, field: "spec.resources[0].templat", says: "unknown field",
		},
		"a key given twice": {
			in:   strings.Replace(twoRGDs, "  name: first\n", "  name: first\n  name: again\n", 1),
			line: 6, field: "metadata.name", says: "given twice (first on line 5)",
		},
		"another apiVersion": {
			in:   strings.Replace(twoRGDs, "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata:\n  name: second", "apiVersion: kro.run/v1\nkind: ResourceGraphDefinition\nmetadata:\n  name: second", 1),
			line: second - 3, field: "apiVersion", says: `is "kro.run/v1", want "kro.run/v1alpha1"`,
		},
		"another kind": {
			in:   strings.Replace(twoRGDs, "kind: ResourceGraphDefinition", "kind: ConfigMap", 1),
			line: 3, field: "kind", says: `is "ConfigMap"`,
		},
		"no name": {
			in:   strings.Replace(twoRGDs, "  name: first\n", "  labels: {}\n", 1),
			line: 4, field: "metadata.name", says: "is required",
		},
		"a wrong type": {
			in:   strings.Replace(twoRGDs, "    kind: First", "    kind: [First]", 1),
			line: 9, field: "spec.schema.kind", says: "cannot unmarshal",
		},
		"broken YAML": {
			in:   strings.Replace(twoRGDs, "    kind: First", "    kind: First\n   bad: indent", 1),
			line: -1, says: "yaml:",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v1alpha1.Load(strings.NewReader(tc.in))
			require.ErrorIs(t, err, v1alpha1.ErrLoad)
			var le *v1alpha1.LoadError
			require.ErrorAs(t, err, &le)
			if tc.line < 0 { // the parser's own line; any will do
				assert.Positive(t, le.Line, "%v", err)
			} else {
				assert.Equal(t, tc.line, le.Line, "%v", err)
			}
			assert.Equal(t, tc.field, le.Field, "%v", err)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}

// LoadFile names the file in its errors, and reads the RGDs the examples
// ship.
func TestLoadFile(t *testing.T) {
	rgds, err := v1alpha1.LoadFile("../../../examples/quickstart/webapp.yaml")
	require.NoError(t, err)
	require.Len(t, rgds, 1)
	assert.Equal(t, "webapp", rgds[0].Name)

	path := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(twoRGDs, "kind: Second", "kinds: Second", 1)), 0o600))
	_, err = v1alpha1.LoadFile(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+":28: document 3: spec.schema.kinds: unknown field")
}
