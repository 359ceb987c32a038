//go:build integration

package resolver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func TestResolverSeesCRDsInstalledLater(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 0)
	r, err := resolver.NewForConfig(fleet.Hub.Config, resolver.Options{RefetchAfterMiss: time.Millisecond})
	require.NoError(t, err)

	s, err := r.ResolveSchema(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	require.NoError(t, err)
	assert.Contains(t, s.Properties, "spec")

	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	_, err = r.ResolveSchema(widget)
	require.ErrorIs(t, err, graph.ErrSchemaNotFound)

	crds, err := apiextensionsclient.NewForConfig(fleet.Hub.Config)
	require.NoError(t, err)
	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ListKind: "WidgetList", Plural: "widgets", Singular: "widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
					},
				}},
			}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		s, err = r.ResolveSchema(widget)
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the new CRD's schema is found without a Reset")
	assert.Equal(t, "integer", s.Properties["spec"].Properties["size"].Type[0])
	namespaced, err := r.IsNamespaced(widget)
	require.NoError(t, err)
	assert.True(t, namespaced, "a namespaced CRD is served under {namespace}")
	namespaced, err = r.IsNamespaced(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"})
	require.NoError(t, err)
	assert.False(t, namespaced)
}
