package krodiff

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

func TestJSONDiffNamesEachDifferingPath(t *testing.T) {
	kro := map[string]any{"a": map[string]any{"b": 1.0, "c": "x"}, "list": []any{"p", "q"}, "gone": true}
	fg := map[string]any{"a": map[string]any{"b": 2.0, "c": "x"}, "list": []any{"p", "r"}, "new": "y"}
	assert.Equal(t, []string{
		`a.b: kro 1, fleetgraph 2`,
		`gone: kro true, fleetgraph absent`,
		`list[1]: kro "q", fleetgraph "r"`,
		`new: kro absent, fleetgraph "y"`,
	}, jsonDiff(kro, fg))
	assert.Empty(t, jsonDiff(kro, kro))
}

func TestDifferenceOfVerdicts(t *testing.T) {
	accepted := Verdict{Accepted: true, CRD: map[string]any{"k": "v"}, Dependencies: map[string][]string{"b": {"a"}}}
	assert.Empty(t, Difference(reject(StageCompile, assert.AnError), reject(StageAdmission, assert.AnError)),
		"both reject: they agree, whatever the stage")
	assert.Empty(t, Difference(accepted, accepted))
	assert.Equal(t, []string{"verdict: kro accepted; fleetgraph rejected at compile: " + assert.AnError.Error()},
		Difference(accepted, reject(StageCompile, assert.AnError)))
	other := Verdict{Accepted: true, CRD: map[string]any{"k": "w"}, Dependencies: map[string][]string{"b": {}}}
	assert.Equal(t, []string{`crd: k: kro "v", fleetgraph "w"`, `dependencies: b: kro ["a"], fleetgraph []`},
		Difference(accepted, other))
}

func TestClassifyRequiresEveryLineCovered(t *testing.T) {
	k := kind("why", `^crd: covered`)
	table := []KnownDifference{{File: "f.yaml", Kinds: []Kind{k}}}

	r := Classify("f.yaml", []string{"crd: covered here"}, table)
	assert.Equal(t, Explained, r.Outcome)
	assert.Equal(t, "why", r.Reason)

	r = Classify("f.yaml", []string{"crd: covered here", "crd: something else"}, table)
	assert.Equal(t, Unexplained, r.Outcome)
	assert.Equal(t, []string{"crd: something else"}, r.Unexplained)

	assert.Equal(t, Stale, Classify("f.yaml", nil, table).Outcome)
	assert.Equal(t, Agree, Classify("g.yaml", nil, table).Outcome)
	assert.Equal(t, Unexplained, Classify("g.yaml", []string{"crd: covered"}, table).Outcome, "only the file's own entry counts")
}

func TestRequiredListsCompareAsSets(t *testing.T) {
	a := map[string]any{"properties": map[string]any{"x": map[string]any{"required": []any{"port", "name"}}}}
	b := map[string]any{"properties": map[string]any{"x": map[string]any{"required": []any{"name", "port"}}}}
	sortRequired(a)
	sortRequired(b)
	assert.Empty(t, jsonDiff(a, b))
}

func TestTablesNameEachFileOnce(t *testing.T) {
	for name, table := range map[string][]KnownDifference{"KnownDifferences": KnownDifferences, "KnownBehaviourDifferences": KnownBehaviourDifferences} {
		seen := map[string]bool{}
		for _, d := range table {
			assert.False(t, seen[d.File], "%s lists %s twice", name, d.File)
			seen[d.File] = true
			assert.NotEmpty(t, d.Kinds, "%s: %s has no kind of difference", name, d.File)
		}
	}
}

func TestNamingProblems(t *testing.T) {
	raw := []byte("# A bad port.\n# names: spec.schema.spec.port\n# names: minimum=10\napiVersion: kro.run/v1alpha1\nspec: {schema: {spec: {port: integer | minimum=10 maximum=1}}}\n")
	named := &graph.Error{Path: "spec.schema.spec.port", Err: errors.New("invalid marker: minimum=10 is greater than maximum=1")}
	assert.Empty(t, NamingProblems(raw, reject(StageCompile, named)))
	assert.Empty(t, NamingProblems(raw, Verdict{Accepted: true}))

	vague := &graph.Error{Path: "spec.schema", Err: errors.New("spec.schema.spec.port: minimum=10 is wrong")}
	assert.Equal(t, []string{`"spec.schema: spec.schema.spec.port: minimum=10 is wrong" names neither a resource nor a field`},
		NamingProblems(raw, reject(StageCompile, vague)))
	assert.Equal(t, []string{`"spec.schema.spec.port: minimum=10" is not a *graph.Error`},
		NamingProblems(raw, reject(StageCompile, errors.New("spec.schema.spec.port: minimum=10"))))
	assert.Equal(t, []string{`the rejection does not name "minimum=10"`},
		NamingProblems(raw, reject(StageCompile, &graph.Error{Path: "spec.schema.spec.port", Err: errors.New("bad")})))

	onlyPath := []byte("# names: spec.schema.spec.port\nspec: {}\n")
	assert.Equal(t, []string{"none of the names is text from the RGD: name the offending expression, marker or value"},
		NamingProblems(onlyPath, reject(StageCompile, named)))
	assert.Len(t, NamingProblems([]byte("spec: {}\n"), reject(StageCompile, named)), 1, "a rejected file must say what its rejection names")

	missing := []byte("# names: spec.resources[0]\n# names (absent): template or externalRef\nspec: {resources: [{id: a}]}\n")
	assert.Empty(t, NamingProblems(missing, reject(StageAdmission, errors.New("spec.resources[0]: exactly one of template or externalRef must be provided"))),
		"what is missing cannot be quoted")
}

// rejections.md lists every kro rejection path with its corpus cases: each
// case it names must exist, and each invalid-* case must be named there.
func TestRejectionTableNamesCorpusFiles(t *testing.T) {
	table, err := os.ReadFile("rejections.md")
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.yaml"))
	require.NoError(t, err)
	inCorpus := map[string]bool{}
	for _, f := range files {
		inCorpus[strings.TrimSuffix(filepath.Base(f), ".yaml")] = true
	}
	named := map[string]bool{}
	for _, name := range regexp.MustCompile(`\b(?:invalid|edge|types|resource)-[a-z0-9-]*[a-z0-9]\b`).FindAllString(string(table), -1) {
		named[name] = true
		assert.True(t, inCorpus[name], "rejections.md names %s, which is not in testdata/corpus", name)
	}
	for name := range inCorpus {
		if strings.HasPrefix(name, "invalid-") {
			assert.True(t, named[name], "testdata/corpus/%s.yaml exercises a kro rejection that rejections.md does not list", name)
		}
	}
}
