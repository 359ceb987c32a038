package graph_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// validateCRD runs the API server's own CRD validation (structural schema,
// defaults, CEL rules, list types...) in process.
func validateCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	v1 := crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1)
	internal := &apiextensions.CustomResourceDefinition{}
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, internal, nil))
	errs := validation.ValidateCustomResourceDefinition(context.Background(), internal)
	assert.Empty(t, errs.ToAggregate(), "the API server would reject the generated CRD")
}

func TestGeneratedCRDsPassAPIServerValidation(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			validateCRD(t, compileFile(t, name, graph.Options{}).CRD)
		})
	}
}

func TestGeneratedCRDShape(t *testing.T) {
	g := compileFile(t, "webapp-ingress", graph.Options{})
	crd := g.CRD
	assert.Equal(t, "webapplications.apps.example.com", crd.Name)
	assert.Equal(t, apiextensionsv1.CustomResourceDefinitionNames{
		Kind: "WebApplication", ListKind: "WebApplicationList", Plural: "webapplications", Singular: "webapplication",
		ShortNames: []string{"wapp"}, Categories: []string{"example"},
	}, crd.Spec.Names)
	assert.Equal(t, apiextensionsv1.NamespaceScoped, crd.Spec.Scope)
	assert.Equal(t, map[string]string{graph.LabelManagedBy: graph.ManagedBy, graph.LabelGraph: "web-application"}, crd.Labels)
	require.Len(t, crd.Spec.Versions, 1)
	v := crd.Spec.Versions[0]
	assert.True(t, v.Served)
	assert.True(t, v.Storage)
	assert.NotNil(t, v.Subresources.Status)
	assert.Equal(t, []string{"State", "Ready", "Age"}, columnNames(v.AdditionalPrinterColumns))

	root := v.Schema.OpenAPIV3Schema
	assert.Empty(t, root.Required, "as in kro, spec is not required at the root")
	spec := root.Properties["spec"]
	assert.Equal(t, []string{"image"}, spec.Required)
	assert.Equal(t, `{}`, string(spec.Properties["ingress"].Default.Raw))
	status := root.Properties["status"]
	assert.Equal(t, "string", status.Properties["state"].Type)
	assert.Nil(t, status.Properties["conditions"].XListType, "conditions are written whole: an atomic list, as in kro")
	assert.Equal(t, "string", status.Properties["url"].Type)
}

// kro v0.9.4 puts spec.schema.shortNames and categories on the generated
// CRD: they are no fleetgraph extension, and Strict accepts them.
func TestShortNamesAndCategoriesAreKros(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc("apiVersion: v1alpha1\nkind: App\nshortNames: [ap, app]\ncategories: [all, platform]\nspec:\n  name: string", "")), graph.Options{Strict: true})
	require.NoError(t, err)
	assert.Empty(t, g.Extensions)
	assert.Equal(t, []string{"ap", "app"}, g.CRD.Spec.Names.ShortNames)
	assert.Equal(t, []string{"all", "platform"}, g.CRD.Spec.Names.Categories)
	validateCRD(t, g.CRD)
}

func TestClusterScopedCRDWithCustomColumns(t *testing.T) {
	g := compileFile(t, "tenant", graph.Options{})
	assert.False(t, g.Instance.Namespaced)
	assert.Equal(t, apiextensionsv1.ClusterScoped, g.CRD.Spec.Scope)
	assert.Equal(t, []string{"Owner", "Namespace"}, columnNames(g.CRD.Spec.Versions[0].AdditionalPrinterColumns))
	owner := g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["owner"]
	assert.Equal(t, "self == oldSelf", owner.XValidations[0].Rule)
}

func TestSpecWithOnlyDefaultsDefaultsToEmpty(t *testing.T) {
	g := compileFile(t, "database", graph.Options{})
	root := g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema
	assert.Empty(t, root.Required)
	assert.Equal(t, `{}`, string(root.Properties["spec"].Default.Raw))
}

func TestPluralFollowsKro(t *testing.T) {
	assert.Equal(t, "webapps", graph.Plural("WebApp"))
	assert.Equal(t, "policies", graph.Plural("Policy"))
	assert.Equal(t, "databases", graph.Plural("Database"))
}

func TestCRDMetadataFromTheRGD(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc("apiVersion: v1\nkind: App\nmetadata:\n  labels: {team: a}\n  annotations: {note: b}", "resources:\n"+cm("a", "", ""))), graph.Options{})
	require.NoError(t, err)
	assert.Equal(t, "a", g.CRD.Labels["team"])
	assert.Equal(t, graph.ManagedBy, g.CRD.Labels[graph.LabelManagedBy])
	assert.Equal(t, map[string]string{"note": "b"}, g.CRD.Annotations)
}

func columnNames(cols []apiextensionsv1.CustomResourceColumnDefinition) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// The default columns carry kro's descriptions word for word.
func TestDefaultPrinterColumnsMatchKro(t *testing.T) {
	g := compileFile(t, "webapp", graph.Options{})
	cols := g.CRD.Spec.Versions[0].AdditionalPrinterColumns
	require.Len(t, cols, 3)
	assert.Equal(t, "The state of a ResourceGraphDefinition instance", cols[0].Description)
	assert.Equal(t, "Whether a ResourceGraphDefinition instance is ready", cols[1].Description)
	assert.Equal(t, "Age of the resource", cols[2].Description)
}

// A validation= rule is CEL the API server compiles when the CRD is
// applied; a rule that does not compile fails Compile instead.
func TestValidationRulesAreCompiled(t *testing.T) {
	schema := "apiVersion: v1alpha1\nkind: App\nspec:\n  port: integer | validation=\"self > 0 && self < 65536\""
	g, err := graph.Compile(parseRGD(t, rgdDoc(schema, "resources:\n"+cm("a", "", ""))), graph.Options{})
	require.NoError(t, err)
	rules := g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["port"].XValidations
	require.Len(t, rules, 1)
	assert.Equal(t, "validation failed", rules[0].Message)

	runFailCases(t, map[string]failCase{
		"rule does not compile": {schema: "apiVersion: v1alpha1\nkind: App\nspec:\n  port: integer | validation=\"self.size() > 0\"",
			resources: "resources:\n" + cm("a", "", ""), kind: graph.ErrSchema, want: "spec.schema.spec.port.x-kubernetes-validations[0].rule: Invalid value"},
		"default breaks a pattern": {schema: "apiVersion: v1alpha1\nkind: App\nspec:\n  name: string | pattern=\"^[a-z]+$\" default=\"A\"",
			resources: "resources:\n" + cm("a", "", ""), kind: graph.ErrSchema, want: `spec.schema.spec.name: invalid marker: default="A" does not match pattern="^[a-z]+$"`},
	})
}
