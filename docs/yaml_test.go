package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// The markers a yaml block may carry on its first line.
const (
	// fragmentMarker opts a block out of compiling and validation: it is
	// part of an object (a template's fields, say), and says why. It must
	// still parse.
	fragmentMarker = "# fragment:"
	// fromMarker says the block is a copy of a file of the repository,
	// which it must equal (as YAML), so that the copy cannot drift.
	fromMarker = "# from:"
)

// yamlReport counts what TestEveryYAMLBlock checked.
type yamlReport struct {
	blocks, documents, rgds, instances, fleetObjects, others int
	fragments, unchecked                                     []string
}

// Every fenced yaml block of README.md, docs/ and the examples' READMEs
// parses (every document of it, with no key given twice). Each
// ResourceGraphDefinition in one loads strictly and compiles with the hub's
// compiler; each instance of an RGD of the same page, and each
// fleetgraph.dev object, passes its CRD's schema as an API server would
// check it (defaults, OpenAPI validation, CEL rules, no unknown fields). A
// block that is not a whole object opts out on its first line with
// "# fragment: <why>".
func TestEveryYAMLBlock(t *testing.T) {
	rep := &yamlReport{}
	for _, p := range pages(t) {
		checkPage(t, p, rep)
	}
	t.Logf("%d yaml blocks, %d documents: %d RGDs compiled, %d instances and %d fleetgraph.dev objects validated, %d other objects parsed",
		rep.blocks, rep.documents, rep.rgds, rep.instances, rep.fleetObjects, rep.others)
	t.Logf("%d blocks skipped as fragments:\n  %s", len(rep.fragments), strings.Join(rep.fragments, "\n  "))
	if len(rep.unchecked) > 0 {
		t.Logf("%d instances not validated (their RGD is not on the page):\n  %s", len(rep.unchecked), strings.Join(rep.unchecked, "\n  "))
	}
	assert.GreaterOrEqual(t, rep.rgds, 4, "RGDs compiled: the page list or the fence pattern is broken")
	assert.Greater(t, rep.instances, 0, "instances validated")
	assert.Greater(t, rep.fleetObjects, 1, "fleetgraph.dev objects validated")
}

// checkPage checks the yaml blocks of one page: RGDs first, so that an
// instance may come before or after its RGD.
func checkPage(t *testing.T, p page, rep *yamlReport) {
	blocks, _ := p.blocks()
	graphs := map[schema.GroupVersionKind]*graph.Graph{}
	type object struct {
		where string
		obj   map[string]any
	}
	var objects []object
	for _, b := range blocks {
		if b.info != "yaml" && b.info != "yml" {
			continue
		}
		rep.blocks++
		where := fmt.Sprintf("%s:%d", p.path, b.line)
		docs, err := yamlDocuments(b.text)
		if err != nil {
			t.Errorf("%s: the block is not YAML (lines count from the fence): %v", where, err)
			continue
		}
		first, _, _ := strings.Cut(b.text, "\n")
		if reason, ok := strings.CutPrefix(first, fragmentMarker); ok {
			if strings.TrimSpace(reason) == "" {
				t.Errorf("%s: %q must say why the block is a fragment", where, fragmentMarker)
			}
			rep.fragments = append(rep.fragments, where+":"+reason)
			continue
		}
		if file, ok := strings.CutPrefix(first, fromMarker); ok {
			checkCopy(t, where, strings.TrimSpace(file), docs)
		}
		for i, doc := range docs {
			rep.documents++
			at := fmt.Sprintf("%s (document %d)", where, i+1)
			obj, err := objectOf(doc)
			if err != nil {
				t.Errorf("%s: %v", at, err)
				continue
			}
			apiVersion, _ := obj["apiVersion"].(string)
			kind, _ := obj["kind"].(string)
			switch {
			case apiVersion == "" || kind == "":
				t.Errorf("%s: not a Kubernetes object (no apiVersion or kind): mark the block %q if it is part of one", at, fragmentMarker+" <why>")
			case apiVersion == v1alpha1.GroupVersion.String() && kind == "ResourceGraphDefinition":
				if g := compileRGD(t, at, doc); g != nil {
					graphs[g.Instance.GVK] = g
					rep.rgds++
				}
			default:
				objects = append(objects, object{at, obj})
			}
		}
	}
	fleetCRDs := fleetgraphCRDs()
	for _, o := range objects {
		gvk := schema.FromAPIVersionAndKind(o.obj["apiVersion"].(string), o.obj["kind"].(string))
		if g, ok := graphs[gvk]; ok {
			validateObject(t, o.where, g.CRD, o.obj)
			rep.instances++
			continue
		}
		if crd, ok := fleetCRDs[gvk]; ok {
			validateObject(t, o.where, crd, o.obj)
			rep.fleetObjects++
			continue
		}
		if gvk.Group == v1alpha1.GroupVersion.Group {
			rep.unchecked = append(rep.unchecked, fmt.Sprintf("%s: %s", o.where, gvk.Kind))
			continue
		}
		rep.others++
	}
}

// yamlDocuments splits a block into its documents (empty ones dropped),
// refusing a key given twice, which YAML parsers otherwise take the last
// of.
func yamlDocuments(text string) ([][]byte, error) {
	dec := yamlv3.NewDecoder(strings.NewReader(text))
	var out [][]byte
	for {
		var node yamlv3.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(node.Content) == 0 || node.Content[0].Tag == "!!null" {
			continue
		}
		if err := noDuplicateKeys(node.Content[0]); err != nil {
			return nil, err
		}
		raw, err := yamlv3.Marshal(node.Content[0])
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
}

func noDuplicateKeys(n *yamlv3.Node) error {
	switch n.Kind {
	case yamlv3.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if first, ok := seen[k.Value]; ok {
				return fmt.Errorf("line %d: key %q given twice (first on line %d)", k.Line, k.Value, first)
			}
			seen[k.Value] = k.Line
			if err := noDuplicateKeys(n.Content[i+1]); err != nil {
				return err
			}
		}
	case yamlv3.SequenceNode:
		for _, item := range n.Content {
			if err := noDuplicateKeys(item); err != nil {
				return err
			}
		}
	}
	return nil
}

// compileRGD loads an RGD strictly and compiles it as the hub would
// without a schema resolver (child kinds typed dynamically).
func compileRGD(t *testing.T, where string, doc []byte) *graph.Graph {
	t.Helper()
	rgds, err := v1alpha1.Load(bytes.NewReader(doc))
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return nil
	}
	g, err := graph.Compile(rgds[0], graph.Options{})
	if err != nil {
		t.Errorf("%s: RGD %q does not compile: %v", where, rgds[0].Name, err)
		return nil
	}
	return g
}

// checkCopy compares a block with the file it says it copies.
func checkCopy(t *testing.T, where, file string, docs [][]byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(file)))
	if err != nil {
		t.Errorf("%s: %s %s: %v", where, fromMarker, file, err)
		return
	}
	want, err := yamlDocuments(string(raw))
	if err != nil {
		t.Errorf("%s: %s: %v", where, file, err)
		return
	}
	if !reflect.DeepEqual(asValues(t, want), asValues(t, docs)) {
		t.Errorf("%s: the block is not what %s holds: copy the file again", where, file)
	}
}

func asValues(t *testing.T, docs [][]byte) []any {
	t.Helper()
	out := make([]any, len(docs))
	for i, d := range docs {
		require.NoError(t, yaml.Unmarshal(d, &out[i]))
	}
	return out
}

// fleetgraphCRDs are the CRDs of fleetgraph's own kinds, by kind.
func fleetgraphCRDs() map[schema.GroupVersionKind]*apiextensionsv1.CustomResourceDefinition {
	out := map[schema.GroupVersionKind]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{
		fleetv1alpha1.GraphRolloutCRD(), fleetv1alpha1.ClusterValuesCRD(), fleetv1alpha1.GraphRevisionCRD(),
		fleetv1alpha1.PullClusterCRD(), fleetv1alpha1.GraphAssignmentCRD(), fleetv1alpha1.GraphReportCRD(),
	} {
		for _, v := range crd.Spec.Versions {
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = crd
		}
	}
	return out
}

// validateObject checks obj against its CRD as an API server would on
// create: defaults, the OpenAPI schema, the CEL rules, and no field the
// schema would prune.
func validateObject(t *testing.T, where string, crd *apiextensionsv1.CustomResourceDefinition, obj map[string]any) {
	t.Helper()
	version := crd.Spec.Versions[0]
	for _, v := range crd.Spec.Versions {
		if crd.Spec.Group+"/"+v.Name == obj["apiVersion"] {
			version = v
		}
	}
	internal := &apiextensions.CustomResourceValidation{}
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(version.Schema, internal, nil))
	ss, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	require.NoError(t, err, "%s: the structural schema of %s", where, crd.Name)
	var problems []string
	pruned := pruning.PruneWithOptions(deepCopy(obj), ss, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	sort.Strings(pruned)
	for _, f := range pruned {
		problems = append(problems, "unknown field "+f)
	}
	structuraldefaulting.Default(obj, ss)
	v, _, err := validation.NewSchemaValidator(internal.OpenAPIV3Schema)
	require.NoError(t, err)
	for _, e := range validation.ValidateCustomResource(nil, obj, v) {
		problems = append(problems, e.Error())
	}
	errs, _ := cel.NewValidator(ss, true, celconfig.PerCallLimit).Validate(context.Background(), nil, ss, obj, nil, celconfig.RuntimeCELCostBudget)
	for _, e := range errs {
		problems = append(problems, e.Error())
	}
	if len(problems) > 0 {
		t.Errorf("%s: %s %v is refused by its CRD (%s):\n  %s", where, obj["kind"], nameOf(obj), crd.Name, strings.Join(problems, "\n  "))
	}
}

// objectOf decodes a document as an API server decodes a request body:
// whole numbers are int64, others float64.
func objectOf(doc []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func nameOf(obj map[string]any) any {
	meta, _ := obj["metadata"].(map[string]any)
	return meta["name"]
}

func deepCopy(obj map[string]any) map[string]any {
	return runtime.DeepCopyJSON(obj)
}
