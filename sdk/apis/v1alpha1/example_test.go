package v1alpha1_test

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// Decode an RGD written for kro.
func ExampleResourceGraphDefinition() {
	doc := `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: pool
spec:
  schema:
    apiVersion: v1alpha1
    kind: Pool
    spec:
      regions: "[]string"
  resources:
  - id: workers
    forEach:
    - region: ${schema.spec.regions}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name + "-" + region}
`
	var rgd v1alpha1.ResourceGraphDefinition
	if err := yaml.UnmarshalStrict([]byte(doc), &rgd); err != nil {
		panic(err)
	}
	fmt.Println(rgd.Spec.Schema.Kind, rgd.Spec.Resources[0].ID, rgd.Spec.Resources[0].ForEach[0]["region"])
	// Output: Pool workers ${schema.spec.regions}
}

// The RGD CRD, for tests and installers.
func ExampleCRD() {
	crd, err := v1alpha1.CRD()
	if err != nil {
		panic(err)
	}
	fmt.Println(crd.Name, crd.Spec.Scope)
	// Output: resourcegraphdefinitions.kro.run Cluster
}
