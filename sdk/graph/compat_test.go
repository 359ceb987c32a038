package graph_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

func crdFor(t *testing.T, schema string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	g, err := graph.Compile(parseRGD(t, rgdDoc(schema, "resources:\n"+cm("a", "", ""))), graph.Options{})
	require.NoError(t, err)
	return g.CRD
}

const baseSchema = `apiVersion: v1alpha1
kind: App
spec:
  name: string | required=true
  size: string | enum="small,medium,large" default=small
  port: integer
  host: string | pattern="^[a-z]+$"
  labels: "map[string]string"
  nested:
    level: integer
  count: integer | minimum=1 maximum=10
  title: string | minLength=2 maxLength=20
  tags: "[]string | minItems=1 maxItems=5"`

func TestCheckCompatibleAllowsSafeChanges(t *testing.T) {
	old := crdFor(t, baseSchema)
	safe := crdFor(t, `apiVersion: v1alpha1
kind: App
spec:
  name: string | required=true description="documented now"
  size: string | enum="small,medium,large,huge" default=small
  port: integer
  host: string | pattern="^[a-z]+$"
  labels: "map[string]string"
  nested:
    level: integer
    extra: string
  count: integer | minimum=0
  title: string | minLength=1 maxLength=30
  tags: "[]string | maxItems=6"
  replicas: integer | required=true default=1
  added: boolean`)
	assert.NoError(t, graph.CheckCompatible(old, safe))
	assert.NoError(t, graph.CheckCompatible(old, old))
	assert.NoError(t, graph.CheckCompatible(nil, old))
}

func TestCheckCompatibleListsEveryBreak(t *testing.T) {
	old := crdFor(t, baseSchema)
	tests := map[string]struct {
		schema string
		want   []string
	}{
		"removed property": {schema: `apiVersion: v1alpha1
kind: App
spec:
  name: string | required=true
  size: string | enum="small,medium,large" default=small
  host: string | pattern="^[a-z]+$"
  labels: "map[string]string"
  nested:
    level: integer`, want: []string{"v1alpha1: spec.port: removed"}},
		"type change and nested removal": {schema: `apiVersion: v1alpha1
kind: App
spec:
  name: string | required=true
  size: string | enum="small,medium,large" default=small
  port: string
  host: string | pattern="^[a-z]+$"
  labels: "map[string]integer"
  nested:
    other: integer`, want: []string{
			"v1alpha1: spec.port: type changed from integer to string",
			"v1alpha1: spec.labels[*]: type changed from string to integer",
			"v1alpha1: spec.nested.level: removed",
		}},
		"new required field": {schema: baseSchema + "\n  owner: string | required=true", want: []string{"v1alpha1: spec.owner: new required field"}},
		"narrowed enum": {schema: `apiVersion: v1alpha1
kind: App
spec:
  name: string | required=true
  size: string | enum="small,medium" default=small
  port: integer | enum="80,443"
  host: string | pattern="^[a-z]+$"
  labels: "map[string]string"
  nested:
    level: integer`, want: []string{
			`v1alpha1: spec.size: enum narrowed (no longer allows "large")`,
			`v1alpha1: spec.port: enum narrowed (the field had no enum)`,
		}},
		"changed pattern": {schema: `apiVersion: v1alpha1
kind: App
spec:
  name: string | required=true pattern="^x"
  size: string | enum="small,medium,large" default=small
  port: integer
  host: string | pattern="^[a-z0-9]+$"
  labels: "map[string]string"
  nested:
    level: integer`, want: []string{
			`v1alpha1: spec.name: pattern changed from "" to "^x"`,
			`v1alpha1: spec.host: pattern changed from "^[a-z]+$" to "^[a-z0-9]+$"`,
		}},
		"removed version": {schema: "apiVersion: v1beta1\nkind: App\nspec:\n  name: string | required=true",
			want: []string{"version v1alpha1 removed"}},
		"scope": {schema: baseSchema + "\nscope: Cluster", want: []string{"scope changed from Namespaced to Cluster"}},
		"tightened bounds": {schema: strings.NewReplacer(
			"count: integer | minimum=1 maximum=10", "count: integer | minimum=2 maximum=9",
			"title: string | minLength=2 maxLength=20", "title: string | minLength=3 maxLength=19",
			"tags: \"[]string | minItems=1 maxItems=5\"", "tags: \"[]string | minItems=2 maxItems=4\"",
			"port: integer", "port: integer | maximum=65535",
		).Replace(baseSchema), want: []string{
			"v1alpha1: spec.count: minimum raised from 1 to 2",
			"v1alpha1: spec.count: maximum lowered from 10 to 9",
			"v1alpha1: spec.title: minLength raised from 2 to 3",
			"v1alpha1: spec.title: maxLength lowered from 20 to 19",
			"v1alpha1: spec.tags: minItems raised from 1 to 2",
			"v1alpha1: spec.tags: maxItems lowered from 5 to 4",
			"v1alpha1: spec.port: maximum 65535 added",
		}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := graph.CheckCompatible(old, crdFor(t, tt.schema))
			require.ErrorIs(t, err, graph.ErrBreakingChange)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
