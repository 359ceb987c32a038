package sdk_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// A graph registered from Go, without any RGD object on the hub; with no
// provider (none here, none in the manager) the hub's own cluster is the
// only spoke.
func ExampleHub_RegisterGraph() {
	rgds, err := v1alpha1.Load(strings.NewReader(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: settings
spec:
  schema:
    apiVersion: v1alpha1
    kind: Settings
    spec:
      color: string | default="blue"
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}
      data:
        color: ${schema.spec.color}
`))
	if err != nil {
		panic(err) // a misspelt key fails here, with its line and field
	}
	hub, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	if err != nil {
		panic(err)
	}
	// Registering works before the manager starts, and after.
	if err := hub.RegisterGraph(context.Background(), rgds[0]); err != nil {
		panic(err)
	}
	fmt.Println(hub.Graphs())
	// Output: [settings]
}
