package spoke_test

import (
	"context"
	"log"

	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// A platform's agent inside one cluster serves the graphs it is given
// there; their CRDs are the platform's to install (by GitOps, say). This
// is what TestARuntimeAloneServesAGraph runs against a real API server.
func Example() {
	ctx := context.Background()
	mgr, err := manager.New(config.GetConfigOrDie(), manager.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rt := spoke.New(spoke.Options{ConfineToNamespace: true})
	// The manager's own cluster is the one served.
	if err := rt.SetupWithManager(mgr); err != nil {
		log.Fatal(err)
	}

	rgds, err := v1alpha1.LoadFile("testdata/webapp-rgd.yaml")
	if err != nil {
		log.Fatal(err)
	}
	g, err := graph.Compile(rgds[0], graph.Options{})
	if err != nil {
		log.Fatal(err)
	}
	// Before or after the manager starts; serving a newer version later
	// replaces this one.
	if err := rt.Serve(spoke.Version{Graph: g}); err != nil {
		log.Fatal(err)
	}
	if err := mgr.Start(ctx); err != nil {
		log.Fatal(err)
	}
}

// With a multicluster-runtime manager, a Runtime serves every cluster the
// provider engages (here, kubeconfig Secrets), each until it leaves.
func Example_multicluster() {
	ctx := context.Background()
	provider := secret.New(secret.Options{})
	mcMgr, err := mcmanager.New(config.GetConfigOrDie(), provider, manager.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := provider.SetupWithManager(mcMgr); err != nil {
		log.Fatal(err)
	}
	rt := spoke.New(spoke.Options{})
	if err := mcMgr.Add(rt); err != nil {
		log.Fatal(err)
	}
	// Serve compiled graphs with rt.Serve, as in Example; their CRDs must
	// be on the clusters (a gate, Runtime.SetGate, can wait for them). Start the
	// multicluster manager: it starts the provider.
	if err := mcMgr.Start(ctx); err != nil {
		log.Fatal(err)
	}
}
