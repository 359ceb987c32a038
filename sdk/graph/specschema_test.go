package graph

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// requireSameAsJSON checks that specSchemaOf converts s as the trip
// through JSON does, or declines it.
func requireSameAsJSON(t *testing.T, what string, s *apiextensionsv1.JSONSchemaProps) bool {
	t.Helper()
	want, err := toSpecSchema(s)
	require.NoError(t, err, what)
	got, ok := specSchemaOf(s)
	if ok && !reflect.DeepEqual(want, got) {
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		t.Fatalf("%s: converted differently\nJSON trip: %s %#v\ndirect:    %s %#v", what, w, want.Extensions, g, got.Extensions)
	}
	return ok
}

// Every field of JSONSchemaProps, set alone: the ones specSchemaOf
// converts come out as JSON would make them; the others make it decline.
// A field apiextensions adds later is neither, and fails here.
func TestSpecSchemaOfConvertsEachFieldAsJSONDoes(t *testing.T) {
	typ := reflect.TypeFor[apiextensionsv1.JSONSchemaProps]()
	var converted []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		s := &apiextensionsv1.JSONSchemaProps{}
		reflect.ValueOf(s).Elem().Field(i).Set(sample(f.Type, 0))
		if requireSameAsJSON(t, f.Name, s) {
			converted = append(converted, f.Name)
		}
	}
	assert.ElementsMatch(t, []string{
		"Description", "Type", "Default", "Maximum", "Minimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems",
		"Enum", "Required", "Items", "Properties", "AdditionalProperties",
		"XPreserveUnknownFields", "XListMapKeys", "XListType", "XValidations",
	}, converted, "fields converted without JSON")
}

func TestSpecSchemaOfDeclinesTuples(t *testing.T) {
	s := &apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{
		JSONSchemas: []apiextensionsv1.JSONSchemaProps{{Type: "string"}},
	}}
	assert.False(t, requireSameAsJSON(t, "tuple", s))
}

// Whole schemas: every testdata and corpus RGD's instance schema.
func TestSpecSchemaOfConvertsEveryCorpusSchemaAsJSONDoes(t *testing.T) {
	var files []string
	for _, pat := range []string{"testdata/*.yaml", "../../hack/krodiff/testdata/corpus/*.yaml", "../../examples/*/*.yaml"} {
		m, err := filepath.Glob(pat)
		require.NoError(t, err)
		files = append(files, m...)
	}
	n := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, doc := range bytes.Split(raw, []byte("\n---")) {
			if !strings.Contains(string(doc), "kind: ResourceGraphDefinition") {
				continue
			}
			rgd := &v1alpha1.ResourceGraphDefinition{}
			if yaml.Unmarshal(doc, rgd) != nil {
				continue
			}
			opts := Options{}.withDefaults()
			diag := newDiagnostics(opts)
			k := newInstanceKind(rgd, opts.Limits, diag)
			k.parseSpec()
			if k.spec == nil || diag.err() != nil {
				continue
			}
			root := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"metadata": objectMetaSchema(), "spec": *k.spec,
			}}
			assert.True(t, requireSameAsJSON(t, file, root), "%s: a SimpleSchema schema is converted without JSON", file)
			n++
		}
	}
	t.Logf("%d schemas", n)
	assert.Greater(t, n, 100)
}

// sample is a value of type t with every field set.
func sample(t reflect.Type, depth int) reflect.Value {
	switch t {
	case reflect.TypeFor[apiextensionsv1.JSON]():
		return reflect.ValueOf(apiextensionsv1.JSON{Raw: []byte(`{"a":[1,"b",true]}`)})
	case reflect.TypeFor[apiextensionsv1.JSONSchemaProps]():
		return reflect.ValueOf(apiextensionsv1.JSONSchemaProps{Type: "string", Description: "d"})
	case reflect.TypeFor[apiextensionsv1.JSONSchemaPropsOrArray]():
		// A list's items; a tuple's (JSONSchemas) is declined, as in
		// TestSpecSchemaOfDeclinesTuples.
		return reflect.ValueOf(apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "integer"}})
	}
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int64:
		v.SetInt(3)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		v.Elem().Set(sample(t.Elem(), depth))
	case reflect.Slice:
		v.Set(reflect.Append(v, sample(t.Elem(), depth)))
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(reflect.ValueOf("k").Convert(t.Key()), sample(t.Elem(), depth))
	case reflect.Struct:
		if depth > 2 {
			break
		}
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				v.Field(i).Set(sample(t.Field(i).Type, depth+1))
			}
		}
	}
	return v
}
