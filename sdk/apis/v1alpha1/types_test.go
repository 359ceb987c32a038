package v1alpha1_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

const kroRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: pool
spec:
  schema:
    apiVersion: v1alpha1
    kind: Pool
    group: example.com
    scope: Cluster
    spec:
      workers: '[]string'
      image: string | default="nginx"
    types:
      Port:
        number: integer
    status:
      count: ${size(workerPods)}
    shortNames: [pl]
    categories: [pools]
    additionalPrinterColumns:
    - name: Image
      type: string
      jsonPath: .spec.image
    metadata:
      labels:
        team: a
  resources:
  - id: cfg
    externalRef:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: shared
        namespace: default
  - id: peers
    externalRef:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        selector:
          matchLabels:
            app: ${schema.metadata.name}
  - id: workerPods
    forEach:
    - worker: ${schema.spec.workers}
    includeWhen:
    - ${schema.spec.image != ""}
    readyWhen:
    - ${each.status.phase == "Running"}
    template:
      apiVersion: v1
      kind: Pod
      metadata:
        name: ${schema.metadata.name + "-" + worker}
`

func TestResourceGraphDefinitionRoundTripsKroYAML(t *testing.T) {
	var rgd v1alpha1.ResourceGraphDefinition
	require.NoError(t, yaml.UnmarshalStrict([]byte(kroRGD), &rgd))

	assert.Equal(t, "Pool", rgd.Spec.Schema.Kind)
	assert.Equal(t, v1alpha1.ResourceScopeCluster, rgd.Spec.Schema.Scope)
	require.Len(t, rgd.Spec.Resources, 3)
	assert.Equal(t, "shared", rgd.Spec.Resources[0].ExternalRef.Metadata.Name)
	assert.True(t, rgd.Spec.Resources[1].ExternalRef.Metadata.HasSelector())
	assert.False(t, rgd.Spec.Resources[0].ExternalRef.Metadata.HasSelector())
	assert.Equal(t, v1alpha1.ForEachDimension{"worker": "${schema.spec.workers}"}, rgd.Spec.Resources[2].ForEach[0])

	out, err := yaml.Marshal(&rgd)
	require.NoError(t, err)
	var before, after map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(kroRGD), &before))
	require.NoError(t, yaml.Unmarshal(out, &after))
	// The only addition on the way out is the empty status.
	delete(after, "status")
	delete(after["metadata"].(map[string]any), "creationTimestamp")
	assert.Equal(t, before, after)
}

func TestDeepCopyIsIndependent(t *testing.T) {
	var rgd v1alpha1.ResourceGraphDefinition
	require.NoError(t, yaml.Unmarshal([]byte(kroRGD), &rgd))
	cp := rgd.DeepCopy()
	cp.Spec.Resources[2].ForEach[0]["worker"] = "changed"
	cp.Spec.Schema.Spec.Raw[0] = 'X'
	assert.Equal(t, "${schema.spec.workers}", rgd.Spec.Resources[2].ForEach[0]["worker"])
	assert.NotEqual(t, byte('X'), rgd.Spec.Schema.Spec.Raw[0])
}

func TestSchemeKnowsResourceGraphDefinition(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(s))
	gvks, _, err := s.ObjectKinds(&v1alpha1.ResourceGraphDefinition{})
	require.NoError(t, err)
	assert.Equal(t, "kro.run/v1alpha1, Kind=ResourceGraphDefinition", gvks[0].String())
}

func TestCRDMatchesTheTypes(t *testing.T) {
	crd, err := v1alpha1.CRD()
	require.NoError(t, err)
	assert.Equal(t, "resourcegraphdefinitions.kro.run", crd.Name)
	assert.Equal(t, []string{"rgd"}, crd.Spec.Names.ShortNames)
	require.Len(t, crd.Spec.Versions, 1)
	v := crd.Spec.Versions[0]
	assert.True(t, v.Served)
	assert.True(t, v.Storage)
	assert.NotNil(t, v.Subresources.Status)
	status := v.Schema.OpenAPIV3Schema.Properties["status"]
	assert.Contains(t, status.Properties, "fleet")

	raw, err := os.ReadFile("crd/kro.run_resourcegraphdefinitions.yaml")
	require.NoError(t, err)
	assert.Equal(t, raw, v1alpha1.CRDYAML())
}

func TestAllowsBreakingChangesReadsBothSpellings(t *testing.T) {
	with := func(k, v string) *v1alpha1.ResourceGraphDefinition {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		rgd.SetAnnotations(map[string]string{k: v})
		return rgd
	}
	assert.True(t, v1alpha1.AllowsBreakingChanges(with(v1alpha1.AnnotationAllowBreakingChanges, "true")))
	assert.True(t, v1alpha1.AllowsBreakingChanges(with("kro.run/allow-breaking-changes", "true")))
	assert.False(t, v1alpha1.AllowsBreakingChanges(with("kro.run/allow-breaking-changes", "True")))
	assert.False(t, v1alpha1.AllowsBreakingChanges(with("other", "true")))
	assert.False(t, v1alpha1.AllowsBreakingChanges(nil))
}
