//go:build integration

package graph_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// TestAgainstARealAPIServer starts one API server and checks, for every
// testdata RGD, that it is accepted by the RGD CRD, that it compiles fully
// typed against the server's own OpenAPI, and that the generated CRD is
// accepted, becomes established and serves instances.
func TestAgainstARealAPIServer(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 0)
	cfg := fleet.Hub.Config
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	crds, err := apiextensionsclient.NewForConfig(cfg)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	rgdCRD, err := v1alpha1.CRD()
	require.NoError(t, err)
	applyCRD(ctx, t, crds, rgdCRD)

	res, err := resolver.NewForConfig(cfg, resolver.Options{})
	require.NoError(t, err)

	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			rgd := loadRGD(t, name)
			createRGD(ctx, t, dyn, rgd)

			g, err := graph.Compile(rgd, graph.Options{Resolver: res})
			require.NoError(t, err, "compiles typed against the server's OpenAPI")
			applyCRD(ctx, t, crds, g.CRD)
			createInstance(ctx, t, dyn, g)
		})
	}
}

func applyCRD(ctx context.Context, t *testing.T, c apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	_, err := c.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err, "the API server accepts the CRD")
	require.Eventually(t, func() bool {
		got, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "CRD %s established", crd.Name)
}

func createRGD(ctx context.Context, t *testing.T, dyn dynamic.Interface, rgd *v1alpha1.ResourceGraphDefinition) {
	t.Helper()
	rgd = rgd.DeepCopy()
	rgd.APIVersion, rgd.Kind = v1alpha1.GroupVersion.String(), "ResourceGraphDefinition"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rgd)
	require.NoError(t, err)
	_, err = dyn.Resource(v1alpha1.GroupVersion.WithResource("resourcegraphdefinitions")).
		Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	require.NoError(t, err, "the RGD CRD accepts the kro YAML")
}

// createInstance creates an instance with the smallest valid spec (every
// required field filled) and checks that defaults were applied.
func createInstance(ctx context.Context, t *testing.T, dyn dynamic.Interface, g *graph.Graph) {
	t.Helper()
	spec := g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": g.Instance.GVK.GroupVersion().String(),
		"kind":       g.Instance.GVK.Kind,
		"metadata":   map[string]any{"name": "sample"},
		"spec":       minimal(spec),
	}}
	gvr := g.Instance.GVK.GroupVersion().WithResource(g.Instance.Plural)
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if g.Instance.Namespaced {
		ri = dyn.Resource(gvr).Namespace("default")
	}
	var created *unstructured.Unstructured
	require.Eventually(t, func() bool { // discovery of a new CRD takes a moment
		var err error
		created, err = ri.Create(ctx, obj, metav1.CreateOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond)
	for field, prop := range spec.Properties {
		if prop.Default != nil {
			assert.Contains(t, created.Object["spec"], field, "default of spec.%s applied", field)
		}
	}
}

// minimal returns a value for each required field of an object schema.
func minimal(s apiextensionsv1.JSONSchemaProps) map[string]any {
	out := map[string]any{}
	for _, name := range s.Required {
		p := s.Properties[name]
		switch p.Type {
		case "object":
			out[name] = minimal(p)
		case "integer", "number":
			out[name] = int64(1)
		case "boolean":
			out[name] = true
		case "array":
			out[name] = []any{}
		default:
			out[name] = "x"
		}
	}
	return out
}
