package crds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What fan-out applies is the intent only: nothing the server owns, no
// status, and the type set so server-side apply accepts it.
func TestApplyObjectIsTheIntentOnly(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "webapps.kro.run", ResourceVersion: "7", UID: "u",
			Labels: map[string]string{"app.kubernetes.io/managed-by": "fleetgraph"}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1alpha1"}},
	}
	u, err := ApplyObject(crd)
	require.NoError(t, err)
	assert.Equal(t, "apiextensions.k8s.io/v1", u.GetAPIVersion())
	assert.Equal(t, "CustomResourceDefinition", u.GetKind())
	assert.NotContains(t, u.Object, "status")
	assert.Empty(t, u.GetResourceVersion())
	assert.Empty(t, u.GetUID())
	assert.Nil(t, u.GetManagedFields())
	assert.Equal(t, "fleetgraph", u.GetLabels()["app.kubernetes.io/managed-by"])
	assert.Equal(t, "7", crd.ResourceVersion, "the compiled CRD is not modified")
}

func TestEstablishmentExplainsWhyNot(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	ok, msg := Establishment(crd)
	assert.False(t, ok)
	assert.Equal(t, "no Established condition yet", msg)

	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Message: "kind taken"},
	}
	ok, msg = Establishment(crd)
	assert.False(t, ok)
	assert.Equal(t, "names not accepted: kind taken", msg)

	crd.Status.Conditions = append(crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue})
	ok, _ = Establishment(crd)
	assert.True(t, ok)
}
