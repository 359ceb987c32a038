package krodiff

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	krov1alpha1 "github.com/kubernetes-sigs/kro/api/v1alpha1"
	krograph "github.com/kubernetes-sigs/kro/pkg/graph"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

// Stages an RGD goes through; a rejection names the one that failed.
const (
	StageAdmission = "admission"
	StageCompile   = "compile"
	StageCRD       = "crd"
)

// MirrorGroup is the API group fleetgraph's RGD CRD is served under in the
// test server: kro's RGD CRD already holds kro.run there.
const MirrorGroup = "mirror.krodiff.fleetgraph.dev"

// kro's controller defaults (cmd/controller flags rgd-max-collection-size
// and rgd-max-collection-dimension-size in v0.9.4).
var kroRGDConfig = krograph.Config{MaxCollectionSize: 1000, MaxCollectionDimensionSize: 10}

// Verdict is what one implementation did with one RGD.
type Verdict struct {
	Accepted bool
	// Stage is where a rejected RGD failed.
	Stage string
	Err   error
	// CRD is the generated CRD as JSON, without bookkeeping, when accepted.
	CRD map[string]any
	// Dependencies are each resource's dependencies, sorted, when accepted.
	Dependencies map[string][]string
}

func (v Verdict) String() string {
	if v.Accepted {
		return "accepted"
	}
	return fmt.Sprintf("rejected at %s: %v", v.Stage, firstLines(v.Err, 3))
}

func reject(stage string, err error) Verdict { return Verdict{Stage: stage, Err: err} }

// Oracle runs both implementations against one API server.
type Oracle struct {
	dyn        dynamic.Interface
	crds       apiextensionsclient.Interface
	kro        *krograph.Builder
	fgResolver *resolver.Resolver
}

var rgdResource = schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "resourcegraphdefinitions"}

// NewOracle connects to the server cfg reaches. The server must already
// serve both RGD CRDs (see InstallRGDCRDs).
func NewOracle(cfg *rest.Config) (*Oracle, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiextensions client: %w", err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("http client: %w", err)
	}
	kro, err := newKroBuilder(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	res, err := resolver.NewForConfig(cfg, resolver.Options{})
	if err != nil {
		return nil, fmt.Errorf("fleetgraph resolver: %w", err)
	}
	return &Oracle{dyn: dyn, crds: crds, kro: kro, fgResolver: res}, nil
}

// newKroBuilder builds kro's graph builder as kro's controller does:
// default schema resolver (compiled-in core definitions, then discovery)
// and a dynamic REST mapper.
func newKroBuilder(cfg *rest.Config, httpClient *http.Client) (*krograph.Builder, error) {
	b, err := krograph.NewBuilder(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("kro graph builder: %w", err)
	}
	return b, nil
}

// Kro runs raw through kro: admission by kro's RGD CRD, kro's builder, and
// the generated CRD's admission.
func (o *Oracle) Kro(ctx context.Context, raw []byte) Verdict {
	admitted, err := o.admit(ctx, raw, rgdResource)
	if err != nil {
		return reject(StageAdmission, err)
	}
	rgd := &krov1alpha1.ResourceGraphDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(admitted.Object, rgd); err != nil {
		return reject(StageAdmission, fmt.Errorf("decoding the admitted RGD: %w", err))
	}
	g, err := o.kro.NewResourceGraphDefinition(rgd, kroRGDConfig)
	if err != nil {
		return reject(StageCompile, err)
	}
	deps := map[string][]string{}
	for id, n := range g.Nodes {
		deps[id] = sortedCopy(n.Meta.Dependencies)
	}
	return o.finish(ctx, g.CRD, deps)
}

// Fleetgraph runs raw through fleetgraph: admission by fleetgraph's RGD CRD
// (under MirrorGroup), graph.Compile with a resolver reading the server, and
// the generated CRD's admission.
func (o *Oracle) Fleetgraph(ctx context.Context, raw []byte) Verdict {
	mirror := rgdResource
	mirror.Group = MirrorGroup
	admitted, err := o.admit(ctx, raw, mirror)
	if err != nil {
		return reject(StageAdmission, err)
	}
	admitted.SetAPIVersion(v1alpha1.GroupVersion.String())
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(admitted.Object, rgd); err != nil {
		return reject(StageAdmission, fmt.Errorf("decoding the admitted RGD: %w", err))
	}
	g, err := graph.Compile(rgd, graph.Options{Resolver: o.fgResolver})
	if err != nil {
		return reject(StageCompile, err)
	}
	deps := map[string][]string{}
	for _, n := range g.Nodes {
		deps[n.ID] = sortedCopy(n.Dependencies)
	}
	return o.finish(ctx, withoutBookkeeping(g.CRD), deps)
}

// admit creates raw's RGD as resource gvr in dry-run mode with strict field
// validation, as `kubectl apply` does, and returns what the server would
// store (defaults applied).
func (o *Oracle) admit(ctx context.Context, raw []byte, gvr schema.GroupVersionResource) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	obj.SetAPIVersion(gvr.GroupVersion().String())
	return o.dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
}

// finish dry-runs the generated CRD and records it.
func (o *Oracle) finish(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, deps map[string][]string) Verdict {
	_, err := o.crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return reject(StageCRD, err)
	}
	m, err := asJSONMap(crd)
	if err != nil {
		return reject(StageCRD, err)
	}
	return Verdict{Accepted: true, CRD: m, Dependencies: deps}
}

// withoutBookkeeping removes fleetgraph's own labels (managed-by and the
// graph name) from a copy of crd: kro's builder adds none (kro's
// controller labels the CRD when it applies it).
func withoutBookkeeping(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd = crd.DeepCopy()
	crd.TypeMeta = metav1.TypeMeta{}
	if crd.Labels[graph.LabelManagedBy] == graph.ManagedBy {
		delete(crd.Labels, graph.LabelManagedBy)
	}
	delete(crd.Labels, graph.LabelGraph)
	if len(crd.Labels) == 0 {
		crd.Labels = nil
	}
	return crd
}

func asJSONMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	// Neither builder sets these; the zero values serialise as null/{}.
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	delete(m, "status")
	sortRequired(m)
	return m, nil
}

// sortRequired sorts every schema's required list in place: its order
// means nothing, and kro builds it from a map, so it varies between runs.
func sortRequired(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if list, ok := child.([]any); ok && k == "required" {
				slices.SortFunc(list, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
				continue
			}
			sortRequired(child)
		}
	case []any:
		for _, child := range v {
			sortRequired(child)
		}
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// firstLines returns err's message cut to n lines, for summaries.
func firstLines(err error, n int) string {
	if err == nil {
		return "<nil>"
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("(+%d more lines)", len(lines)-n))
	}
	return strings.Join(lines, " | ")
}
