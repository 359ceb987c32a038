package sample_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/sample"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// The sample of every RGD of the kro oracle's corpus that compiles passes
// its CRD's validation as the API server runs it (OpenAPI schema with
// defaults applied, then the CEL rules of validation= markers): it
// applies as it is. An integration test applies the quickstart's to a
// spoke and waits for ACTIVE.
func TestSamplesPassTheirCRDsValidation(t *testing.T) {
	checked := eachCorpusSample(t, func(path string, crd *apiextensionsv1.CustomResourceDefinition, obj map[string]any) {
		for _, e := range validate(t, crd, obj) {
			t.Errorf("%s: the sample instance is refused: %v\n%v", path, e, obj)
		}
	})
	assert.Greater(t, checked, 90, "samples checked")
}

// The sample shows every field the API server would default: defaulting
// it, as the server does, adds nothing. (kro's CRDs default spec to {}
// when no field is required; the sample once stopped there.)
func TestSamplesShowEveryDefault(t *testing.T) {
	withDefaults := 0
	checked := eachCorpusSample(t, func(path string, crd *apiextensionsv1.CustomResourceDefinition, obj map[string]any) {
		sampled, defaulted := asJSON(t, obj), asJSON(t, obj)
		structuraldefaulting.Default(defaulted, structural(t, crd))
		assert.Equal(t, defaulted, sampled, "%s: the sample lacks a default", path)
		if crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Default != nil {
			withDefaults++
		}
	})
	assert.Greater(t, checked, 90, "samples checked")
	assert.Positive(t, withDefaults, "some spec defaults to {}: the case that was missed")
}

// eachCorpusSample calls fn with the sample instance of every RGD of the
// kro oracle's corpus that compiles, and returns how many.
func eachCorpusSample(t *testing.T, fn func(path string, crd *apiextensionsv1.CustomResourceDefinition, obj map[string]any)) int {
	t.Helper()
	files, err := filepath.Glob("../../../../../hack/krodiff/testdata/corpus/*.yaml")
	require.NoError(t, err)
	n := 0
	for _, path := range files {
		rgds, err := v1alpha1.LoadFile(path)
		if err != nil {
			continue
		}
		g, err := graph.Compile(rgds[0], graph.Options{})
		if err != nil {
			continue
		}
		_, obj, err := sample.Instance(g.CRD, sample.Options{})
		require.NoError(t, err, path)
		fn(filepath.Base(path), g.CRD, obj)
		n++
	}
	return n
}

// asJSON is obj as a JSON decoder gives it, as the API server sees it.
func asJSON(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

func structural(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *structuralschema.Structural {
	t.Helper()
	internal := &apiextensions.CustomResourceValidation{}
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(crd.Spec.Versions[0].Schema, internal, nil))
	ss, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	require.NoError(t, err)
	return ss
}

// validate runs the API server's validation of a custom resource on obj.
func validate(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, obj map[string]any) []error {
	t.Helper()
	internal := &apiextensions.CustomResourceValidation{}
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(crd.Spec.Versions[0].Schema, internal, nil))
	ss, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	require.NoError(t, err)
	structuraldefaulting.Default(obj, ss)
	v, _, err := validation.NewSchemaValidator(internal.OpenAPIV3Schema)
	require.NoError(t, err)
	var out []error
	for _, e := range validation.ValidateCustomResource(nil, obj, v) {
		out = append(out, e)
	}
	errs, _ := cel.NewValidator(ss, true, celconfig.PerCallLimit).Validate(context.Background(), nil, ss, obj, nil, celconfig.RuntimeCELCostBudget)
	for _, e := range errs {
		out = append(out, e)
	}
	return out
}
