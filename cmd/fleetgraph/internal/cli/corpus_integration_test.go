//go:build integration

package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli"
	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/input"
	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/schemas"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

const (
	corpusDir     = "../../../../hack/krodiff/testdata/corpus"
	corpusCRDsDir = "../../../../hack/krodiff/testdata/crds"
)

// validate, offline, agrees with the compiler's verdict on every file of
// the kro oracle's corpus. The verdict is reached as hack/krodiff reaches
// fleetgraph's: the RGD is admitted by a real API server (its RGD CRD's
// validation, strict fields), compiled with a resolver reading that
// server's OpenAPI (where the corpus's custom kinds are installed), and its
// CRD admitted. validate is given the same custom kinds as CRD files; with
// none it differs only on files whose custom kinds it cannot know, and
// then a warning names the kind.
func TestValidateAgreesWithTheCompilerOnTheCorpus(t *testing.T) {
	ctx := context.Background()
	crds, err := schemas.ReadCRDs(input.Options{}, corpusCRDsDir)
	require.NoError(t, err)
	ext, err := apiextensionsclient.NewForConfig(fleet.Hub.Config)
	require.NoError(t, err)
	// The RGD CRD too: admission is the first step of every verdict, and
	// no other test may have installed it yet (they run in any order).
	rgdCRD, err := v1alpha1.CRD()
	require.NoError(t, err)
	for _, crd := range append(crds, rgdCRD) {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		require.NoError(t, client0(err))
	}
	res, err := resolver.NewForConfig(fleet.Hub.Config, resolver.Options{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(fleet.Hub.Config)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		res.Reset()
		for _, crd := range crds {
			_, err := res.ResolveSchema(schema.GroupVersionKind{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Kind: crd.Spec.Names.Kind})
			assert.NoError(ct, err)
		}
		_, err := dyn.Resource(rgdResource).List(ctx, metav1.ListOptions{Limit: 1})
		assert.NoError(ct, err, "the hub serves ResourceGraphDefinitions")
	}, wait, tick, "the corpus's custom kinds are in the hub's OpenAPI, and RGDs are served")
	ref := reference{dyn: dyn, ext: ext, res: res}

	files, err := filepath.Glob(filepath.Join(corpusDir, "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 150)
	accepted := 0
	for _, path := range files {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		want, why := ref.verdict(ctx, raw)
		if want {
			accepted++
		}
		withCRDs := fleetgraph(t, "validate", "--schemas-from", corpusCRDsDir, path)
		assert.Equal(t, want, withCRDs.code == cli.ExitOK, "%s: the compiler says accepted=%v (%s); validate --schemas-from says:\n%s", filepath.Base(path), want, why, withCRDs)
		assert.NotEqual(t, cli.ExitError, withCRDs.code, withCRDs.String())

		offline := fleetgraph(t, "validate", path)
		if want != (offline.code == cli.ExitOK) {
			assert.True(t, !want && strings.Contains(offline.out, "is not a kind built into Kubernetes"),
				"%s: offline validate differs from the compiler (accepted=%v, %s) without a warning naming a custom kind:\n%s", filepath.Base(path), want, why, offline)
		}
	}
	t.Logf("%d corpus files: the compiler accepts %d and rejects %d", len(files), accepted, len(files)-accepted)
}

func client0(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// reference reaches the compiler's verdict on an RGD as hack/krodiff does.
type reference struct {
	dyn dynamic.Interface
	ext apiextensionsclient.Interface
	res *resolver.Resolver
}

var rgdResource = schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "resourcegraphdefinitions"}

func (r reference) verdict(ctx context.Context, raw []byte) (bool, string) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
		return false, "not YAML: " + err.Error()
	}
	admitted, err := r.dyn.Resource(rgdResource).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	if apierrors.IsAlreadyExists(err) {
		admitted, err = obj, nil // validated, then found taken: admitted
	}
	if err != nil {
		return false, "admission: " + err.Error()
	}
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(admitted.Object, rgd); err != nil {
		return false, "decoding: " + err.Error()
	}
	g, err := graph.Compile(rgd, graph.Options{Resolver: r.res})
	if err != nil {
		return false, "compile: " + err.Error()
	}
	crd := g.CRD.DeepCopy()
	crd.Name = "x" + crd.Name // never the name of a CRD the hub serves
	crd.Spec.Names.Plural = "x" + crd.Spec.Names.Plural
	if _, err := r.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, "crd: " + err.Error()
	}
	return true, "accepted"
}

// --schemas-from a kubeconfig file, or "cluster" for --kubeconfig's,
// type-checks child templates against what that cluster serves.
func TestValidateReadsSchemasFromACluster(t *testing.T) {
	ctx := context.Background()
	crds, err := schemas.ReadCRDs(input.Options{}, "testdata/crds")
	require.NoError(t, err)
	ext, err := apiextensionsclient.NewForConfig(fleet.Hub.Config)
	require.NoError(t, err)
	for _, crd := range crds {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		require.NoError(t, client0(err))
	}
	for _, args := range [][]string{
		{"validate", "--schemas-from", hubConfig, "testdata/custom-kind.yaml"},
		{"--kubeconfig", hubConfig, "validate", "--schemas-from", "cluster", "testdata/custom-kind.yaml"},
	} {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			r := fleetgraph(t, args...)
			assert.Equal(ct, cli.ExitFailed, r.code, r.String())
			assert.Contains(ct, r.out, `custom-kind.yaml:21: resource "widget": spec.colour: unknown field "colour": the kind's schema has no such field`)
		}, wait, tick, "once the hub's OpenAPI has Widget: %v", args)
	}
	r := fleetgraph(t, "--kubeconfig", hubConfig, "validate", "--schemas-from", "cluster", "testdata/shapes.yaml", webapp)
	assert.Equal(t, cli.ExitOK, r.code, "built-in kinds come from the cluster: %s", r)
}
