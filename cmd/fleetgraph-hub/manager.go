package main

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/fleetgraph/fleetgraph/providers/kcp"
	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// setupper is what a provider needs from the manager before it starts.
type setupper interface {
	SetupWithManager(mcmanager.Manager) error
}

// newManager wires the provider, the multicluster manager and the hub.
func newManager(cfg *rest.Config, o options) (mcmanager.Manager, error) {
	provider, err := newProvider(cfg, o)
	if err != nil {
		return nil, err
	}
	coordinator, err := o.replicas.coordinator(cfg)
	if err != nil {
		return nil, err
	}
	mgr, err := mcmanager.New(cfg, provider, managerOptions(o), coordinator...)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	hub, err := sdk.NewHub(nil, o.replicas.hubOptions(sdk.Options{ // nil: the manager's provider
		RGDs:      sdk.RGDOptions{InstallCRD: o.installRGDCRD},
		Instances: spoke.Options{Workers: o.workers},
		CRDs: sdk.CRDOptions{
			DeleteOnUnregister: o.deleteCRDs,
			EstablishTimeout:   o.establishTimeout,
		},
		Fleet: sdk.FleetOptions{StatusResync: o.statusResync},
		Pull:  sdk.PullOptions{Enable: o.pull, HeartbeatGrace: o.pullGrace},
		Rollouts: sdk.RolloutOptions{
			PlacementDecisions: sdk.PlacementDecisionOptions{Namespace: o.publishNamespace},
		},
	}))
	if err != nil {
		return nil, err
	}
	var setups []error
	if s, ok := provider.(setupper); ok {
		setups = append(setups, s.SetupWithManager(mgr))
	}
	setups = append(setups, hub.SetupWithManager(mgr),
		mgr.GetLocalManager().AddHealthzCheck("ping", healthz.Ping),
		mgr.GetLocalManager().AddReadyzCheck("ping", healthz.Ping))
	if err := errors.Join(setups...); err != nil {
		return nil, fmt.Errorf("setting up the hub: %w", err)
	}
	return mgr, nil
}

// newProvider returns the provider --provider names; nil is single-cluster
// mode.
func newProvider(cfg *rest.Config, o options) (multicluster.Provider, error) {
	switch o.provider {
	case providerSingle:
		return nil, nil
	case providerKCPWorkspaces:
		p, err := kcp.New(cfg, logicalcluster.NewPath(o.kcpParent), kcp.Options{Recursive: o.kcpRecursive})
		if err != nil {
			return nil, fmt.Errorf("kcp provider: %w", err)
		}
		return p, nil
	default:
		safety, err := o.kubeconfigs.safety()
		if err != nil {
			return nil, err
		}
		return secret.New(secret.Options{Namespace: o.secretNamespace, Safety: safety}), nil
	}
}

func managerOptions(o options) manager.Options {
	return manager.Options{
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.leaderElectionID,
		LeaderElectionNamespace: o.leaderElectionNS,
		// A replica that loses its lease exits at once; another takes over.
		LeaderElectionReleaseOnCancel: true,
	}
}
