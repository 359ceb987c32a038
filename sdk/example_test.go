package sdk_test

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// A hub embedded in an existing controller-runtime manager, with spokes
// taken from kubeconfig Secrets on the hub cluster.
func ExampleNewHub() {
	ctx := ctrl.SetupSignalHandler()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	provider := secret.New(secret.Options{})
	mcMgr, err := mcmanager.WithMultiCluster(mgr, provider)
	if err != nil {
		panic(err)
	}
	if err := provider.SetupWithManager(mcMgr); err != nil {
		panic(err)
	}
	hub, err := sdk.NewHub(provider, sdk.Options{})
	if err != nil {
		panic(err)
	}
	if err := hub.SetupWithManager(mcMgr); err != nil {
		panic(err)
	}
	// Start the multicluster manager: it starts the provider too.
	if err := mcMgr.Start(ctx); err != nil {
		panic(err)
	}
}

// A graph registered from Go, without any RGD object on the hub; a nil
// provider serves the hub's own cluster.
func ExampleHub_RegisterGraph() {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	err := yaml.Unmarshal([]byte(`
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
`), rgd)
	if err != nil {
		panic(err)
	}
	hub, err := sdk.NewHub(nil, sdk.Options{DisableRGDController: true})
	if err != nil {
		panic(err)
	}
	// Registering works before the manager starts, and after.
	if err := hub.RegisterGraph(context.Background(), rgd); err != nil {
		panic(err)
	}
	fmt.Println(hub.Graphs())
	// Output: [settings]
}
