package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHubCRDsAreNamedAsTheirConstants(t *testing.T) {
	assert.Equal(t, GraphRevisionCRDName, GraphRevisionCRD().Name)
	assert.Equal(t, "graphrevision", GraphRevisionCRD().Spec.Names.Singular)
	assert.Equal(t, GraphRolloutCRDName, GraphRolloutCRD().Name)
	assert.Equal(t, GraphRolloutKind+"List", GraphRolloutCRD().Spec.Names.ListKind)
	assert.NotNil(t, GraphRolloutCRD().Spec.Versions[0].Subresources.Status, "the hub writes status through /status")
}

func TestClusterValuesCRD(t *testing.T) {
	crd := ClusterValuesCRD()
	assert.Equal(t, ClusterValuesCRDName, crd.Name)
	assert.Equal(t, ClusterValuesKind+"List", crd.Spec.Names.ListKind)
	assert.Equal(t, apiextensionsv1.ClusterScoped, crd.Spec.Scope, "tenants' namespaced permissions never reach it")
	assert.NotNil(t, crd.Spec.Versions[0].Subresources.Status, "the hub writes status through /status")
	assert.Equal(t, []string{"values"}, crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Required)
}

// spec.placementDecision names one decision: both its namespace and its
// name are required, and neither may be empty.
func TestGraphRolloutPlacementDecisionSchema(t *testing.T) {
	spec := GraphRolloutCRD().Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	pd, ok := spec.Properties["placementDecision"]
	assert.True(t, ok)
	assert.ElementsMatch(t, []string{"namespace", "name"}, pd.Required)
	for _, f := range []string{"namespace", "name"} {
		assert.Equal(t, int64(1), *pd.Properties[f].MinLength, f)
	}
	in := GraphRolloutSpec{PlacementDecision: &PlacementDecisionRef{Namespace: "a", Name: "b"}}
	out := in.DeepCopy()
	out.PlacementDecision.Name = "c"
	assert.Equal(t, "b", in.PlacementDecision.Name, "DeepCopy copies the reference")
}
