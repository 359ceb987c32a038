package clusterprofile_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/providers/clusterprofile"
	"github.com/fleetgraph/fleetgraph/sdk"
)

// Serve a graph on the production clusters an inventory lists as
// ClusterProfiles in the "fleet" namespace: those its cluster manager
// labels tier=prod, in the region the manager reports as a property. The
// platform allows one credential plugin; profiles that offer another are
// reached through their kubeconfig Secrets, or reported.
func Example() {
	ctx := context.Background()
	var hubConfig *rest.Config // the hub's credentials, e.g. ctrl.GetConfigOrDie()

	provider := clusterprofile.New(clusterprofile.Options{
		Namespace: "fleet",
		// Only the profiles this hub is meant to serve.
		LabelSelector: labels.SelectorFromSet(labels.Set{"x-k8s.io/cluster-manager": "open-cluster-management"}),
		CredentialPlugins: []clusterprofile.CredentialPlugin{{
			Name:    "secretreader",
			Command: "/usr/local/bin/secretreader-plugin",
			Env:     map[string]string{"HOME": "/var/lib/fleetgraph"},
		}},
	})
	hub, err := sdk.NewHub(provider, sdk.Options{
		Rollouts: sdk.RolloutOptions{
			Placement: func(_, _ string, l map[string]string) bool {
				return l["tier"] == "prod" && l[clusterprofile.PropertyPrefix+"region"] == "eu"
			},
		},
	})
	if err != nil {
		panic(err)
	}
	mgr, err := mcmanager.New(hubConfig, provider, manager.Options{})
	if err != nil {
		panic(err)
	}
	if err := provider.SetupWithManager(mgr); err != nil {
		panic(err) // e.g. a plugin whose command is not an absolute path
	}
	if err := hub.SetupWithManager(mgr); err != nil {
		panic(err)
	}
	fmt.Println("serving the fleet's production clusters")
	if err := mgr.Start(ctx); err != nil {
		panic(err)
	}
}
