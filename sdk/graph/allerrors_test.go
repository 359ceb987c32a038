package graph_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// brokenInEveryPhase has a schema error, a duplicate id and a template
// without apiVersion (structure), and expressions in a sound resource:
// one reads what does not exist, one the broken resource, one the schema
// that failed.
const brokenInEveryPhase = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: broken}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Broken
    spec:
      size: intger
      name: string
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.spec.name}
      data:
        wrong: ${schema.spec.name + 1}
        other: ${nowhere.metadata.name}
        fine: ${halfway.metadata.name}
  - id: extra
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: once}
  - id: extra
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: twice}
  - id: halfway
    template:
      kind: ConfigMap
      metadata:
        name: ${schema.spec.nme}
`

// messages lists the *graph.Errors err joins, as "resource: path: message".
func messages(t *testing.T, err error) []string {
	t.Helper()
	j, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "a joined error: %v", err)
	var out []string
	for _, e := range j.Unwrap() {
		var ge *graph.Error
		require.True(t, errors.As(e, &ge), "%v", e)
		out = append(out, ge.ResourceID+": "+ge.Path+": "+ge.Err.Error())
	}
	return out
}

// With AllErrors, one Compile reports the structure's problems and the
// expressions' of every sound resource; an expression that reads a broken
// resource is not blamed for it, and a broken resource's own expressions
// are not compiled (nothing is guessed about its kind).
func TestAllErrorsReportsEveryPhaseInOneCall(t *testing.T) {
	rgd := parseRGD(t, brokenInEveryPhase)
	_, stopped := graph.Compile(rgd, graph.Options{})
	require.Error(t, stopped)
	_, err := graph.Compile(rgd, graph.Options{AllErrors: true})
	require.Error(t, err)
	assert.Equal(t, messages(t, stopped), messages(t, err)[:len(messages(t, stopped))], "the structure's errors come first, as without AllErrors")
	assert.ElementsMatch(t, []string{
		`: spec.schema.spec.size: unknown type "intger"`,
		`extra: spec.resources[2].id: duplicate id "extra"`,
		`halfway: apiVersion: required, and must be a plain string without ${}`,
	}, messages(t, stopped))
	more := messages(t, err)[len(messages(t, stopped)):]
	require.Len(t, more, 1, "%q", more)
	assert.Contains(t, more[0], `config: data.other: undeclared reference to 'nowhere'`)
	assert.NotContains(t, err.Error(), "data.wrong", "a schema that failed is typed dyn: nothing is guessed")
}

// Only resources a structural error names are left out: with a sound
// resource that has an expression error beside them, AllErrors finds it.
func TestAllErrorsCompilesTheSoundResources(t *testing.T) {
	rgd := parseRGD(t, `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: mixed}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Mixed
    spec:
      name: string
  resources:
  - id: good
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.spec.nme}
  - id: Bad
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: bad}
`)
	_, stopped := graph.Compile(rgd, graph.Options{})
	assert.Len(t, messages(t, stopped), 1)
	_, err := graph.Compile(rgd, graph.Options{AllErrors: true})
	got := messages(t, err)
	require.Len(t, got, 2, "%q", got)
	assert.Contains(t, got[1], `good: metadata.name: undefined field 'nme'`)
}

// A spec.schema.spec that is not an object leaves no type for schema:
// AllErrors types it dyn and goes on, without a panic.
func TestAllErrorsSurvivesASchemaThatDoesNotDecode(t *testing.T) {
	rgd := parseRGD(t, `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: odd}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Odd
    spec: [1, 2]
  resources:
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.spec.name + 1 + "x"}
`)
	_, err := graph.Compile(rgd, graph.Options{AllErrors: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.schema.spec")
}

// AllErrors never changes whether an RGD compiles, nor the first errors
// reported: every RGD of the package's and the kro corpus's testdata.
func TestAllErrorsAgreesOnEveryTestdataRGD(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	corpus, err := filepath.Glob("../../hack/krodiff/testdata/corpus/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, corpus)
	for _, f := range append(files, corpus...) {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		rgds, err := v1alpha1.Load(bytes.NewReader(raw))
		if err != nil {
			continue // the loader refuses it: nothing to compile
		}
		for _, rgd := range rgds {
			_, plain := graph.Compile(rgd, graph.Options{})
			_, all := graph.Compile(rgd, graph.Options{AllErrors: true})
			if plain == nil {
				assert.NoError(t, all, "%s: %s", f, rgd.Name)
				continue
			}
			require.Error(t, all, "%s: %s", f, rgd.Name)
			assert.Contains(t, all.Error(), plain.Error(), "%s: %s", f, rgd.Name)
		}
	}
}

// A graph that reads fleet without a target is refused at the first
// expression that reads it.
func TestFleetWithoutATargetNamesWhereItIsRead(t *testing.T) {
	_, err := graph.Compile(parseRGD(t, `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: fl}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Fl
    spec:
      name: string
  resources:
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.spec.name}
      data:
        count: ${string(size(fleet.clusters))}
`), graph.Options{})
	var ge *graph.Error
	require.True(t, errors.As(err, &ge), "%v", err)
	assert.Equal(t, "cm", ge.ResourceID)
	assert.Equal(t, "data.count", ge.Path)
	assert.Equal(t, "${string(size(fleet.clusters))}", ge.Expression)
	assert.ErrorIs(t, err, graph.ErrInvalid)
}

// With AllErrors, a misuse of fleet is reported beside the other
// problems, not only once they are fixed.
func TestAllErrorsReportsAMisuseOfFleetBesideOtherProblems(t *testing.T) {
	_, err := graph.Compile(parseRGD(t, `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: fl}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Fl
    spec:
      size: intger
  resources:
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: x
      data:
        count: ${string(size(fleet.clusters))}
`), graph.Options{AllErrors: true})
	got := messages(t, err)
	require.Len(t, got, 2, "%q", got)
	assert.Contains(t, got[1], "cm: data.count: the fleet variable is read only by hub graphs")
}
