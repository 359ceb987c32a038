package capi_test

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/providers/capi"
	"github.com/fleetgraph/fleetgraph/sdk"
)

// Serve graphs on every workload cluster that Cluster API creates in the
// "clusters" namespace of a management cluster and labels
// fleetgraph=enabled, placed by the Clusters' own labels.
func Example() {
	ctx := context.Background()
	var managementConfig *rest.Config // the management cluster's credentials

	provider := capi.New(capi.Options{
		Namespace:     "clusters",
		LabelSelector: labels.SelectorFromSet(labels.Set{"fleetgraph": "enabled"}),
	})
	hub, err := sdk.NewHub(provider, sdk.Options{
		Rollouts: sdk.RolloutOptions{Placement: func(_, _ string, l map[string]string) bool { return l["env"] == "prod" }},
	})
	if err != nil {
		panic(err)
	}
	mgr, err := mcmanager.New(managementConfig, provider, manager.Options{})
	if err != nil {
		panic(err)
	}
	if err := provider.SetupWithManager(mgr); err != nil {
		panic(err)
	}
	if err := hub.SetupWithManager(mgr); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctx); err != nil {
		panic(err)
	}
}
