package sdk_test

import (
	"context"
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
)

// A hub embedded in an existing controller-runtime manager, with spokes
// taken from kubeconfig Secrets on the hub cluster. embedHub is the code of
// examples/embed-manager, which is tested against a real hub and spoke.
func ExampleNewHub() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	if err := embedHub(ctrl.SetupSignalHandler(), mgr, secret.Safety{}); err != nil {
		panic(err)
	}
}

// embedHub adds a fleetgraph hub to mgr and runs it until ctx ends; safety
// is what the spokes' kubeconfigs may do beyond the safe defaults.
func embedHub(ctx context.Context, mgr manager.Manager, safety secret.Safety) error {
	// embed:begin
	// Spokes are kubeconfig Secrets on the hub, in namespace fleetgraph-system;
	// safety relaxes what their kubeconfigs may do (zero: nothing unsafe).
	provider := secret.New(secret.Options{Safety: safety})
	// The same manager, multicluster-aware; it keeps its controllers.
	mcMgr, err := mcmanager.WithMultiCluster(mgr, provider)
	if err != nil {
		return err
	}
	// nil: the hub serves the manager's provider. Options document defaults.
	hub, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
	if err != nil {
		return err
	}
	// The provider watches its Secrets; the hub serves this cluster's RGDs.
	if err := errors.Join(provider.SetupWithManager(mcMgr), hub.SetupWithManager(mcMgr)); err != nil {
		return err
	}
	// Start mcMgr, not mgr: only the multicluster manager starts the provider.
	return mcMgr.Start(ctx)
	// embed:end
}
