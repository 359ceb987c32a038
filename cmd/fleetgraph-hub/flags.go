package main

import (
	"flag"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/fleetgraph/fleetgraph/providers/secret"
)

// The providers --provider accepts.
const (
	providerSecret        = "secret"
	providerSingle        = "single"
	providerKCPWorkspaces = "kcp-workspaces"
)

// options are the command's flags.
type options struct {
	provider         string
	secretNamespace  string
	kcpParent        string
	kcpRecursive     bool
	metricsAddr      string
	probeAddr        string
	leaderElect      bool
	leaderElectionNS string
	leaderElectionID string
	installRGDCRD    bool
	deleteCRDs       bool
	workers          int
	establishTimeout time.Duration
	kubeconfigs      kubeconfigOptions
	statusResync     time.Duration
	pull             bool
	pullGrace        time.Duration
	publishNamespace string
	replicas         replicaOptions
	zap              zap.Options
}

// parseFlags reads args into options. --kubeconfig is registered by
// controller-runtime on flag.CommandLine; fs is that set in main.
func parseFlags(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	fs.StringVar(&o.provider, "provider", providerSecret,
		"where spokes come from: secret (kubeconfig Secrets on the hub), single (the hub cluster itself), kcp-workspaces (workspaces below --kcp-parent)")
	fs.StringVar(&o.secretNamespace, "secret-namespace", secret.DefaultNamespace, "namespace of the spokes' kubeconfig Secrets (provider secret)")
	o.kubeconfigs.bindFlags(fs)
	fs.StringVar(&o.kcpParent, "kcp-parent", "", "logical cluster path whose child workspaces are spokes, e.g. root:org (provider kcp-workspaces)")
	fs.BoolVar(&o.kcpRecursive, "kcp-recursive", false, "engage the whole workspace tree below --kcp-parent (provider kcp-workspaces)")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", `metrics endpoint address; "0" turns it off`)
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", `/healthz and /readyz address; "0" turns them off`)
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "run as one of several replicas, only the leader serving")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace)")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "fleetgraph-hub.fleetgraph.dev", "name of the leader-election Lease")
	fs.BoolVar(&o.installRGDCRD, "install-rgd-crd", true, "install the kro.run/v1alpha1 ResourceGraphDefinition CRD on the hub if fleetgraph may")
	fs.BoolVar(&o.deleteCRDs, "delete-crds-on-unregister", false, "remove a graph's CRD from spokes with no instances left when its RGD is deleted")
	fs.IntVar(&o.workers, "workers", 0, "instances of one graph reconciled at once (0: the SDK's default)")
	fs.DurationVar(&o.establishTimeout, "establish-timeout", 0, "bound on one wait for a CRD to be established on a spoke (0: the SDK's default)")
	fs.DurationVar(&o.statusResync, "status-resync", 0, "how often each RGD's fleet status is refreshed (0: the SDK's default, 10s)")
	fs.BoolVar(&o.pull, "pull", false, "serve pull clusters: PullClusters on the hub, each served by an agent inside it (cmd/fleetgraph-agent) that the hub never connects to")
	fs.DurationVar(&o.pullGrace, "pull-heartbeat-grace", 0, "how long a pull cluster's agent may miss its heartbeat before the cluster shows Unreachable (0: the SDK's default, 40s)")
	fs.StringVar(&o.publishNamespace, "publish-placement-namespace", "",
		"hub namespace where each GraphRollout's placed clusters are published as PlacementDecisions (default: none published)")
	o.replicas.bindFlags(fs)
	o.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	err := o.validate()
	return o, err
}

func (o *options) validate() error {
	switch o.provider {
	case providerSecret, providerSingle:
	case providerKCPWorkspaces:
		if o.kcpParent == "" {
			return fmt.Errorf("--provider=%s needs --kcp-parent", o.provider)
		}
	default:
		return fmt.Errorf("unknown --provider %q: want %s, %s or %s", o.provider, providerSecret, providerSingle, providerKCPWorkspaces)
	}
	if o.workers < 0 {
		return fmt.Errorf("--workers must not be negative, got %d", o.workers)
	}
	if o.pull && o.replicas.shard {
		return fmt.Errorf("--pull and --replicas-shard exclude each other: pull clusters are served by one replica (use --leader-elect)")
	}
	if o.replicas.shard && o.leaderElect {
		return fmt.Errorf("--replicas-shard and --leader-elect exclude each other: sharded replicas all serve, each its own clusters")
	}
	if _, err := o.kubeconfigs.safety(); err != nil {
		return err
	}
	if err := o.replicas.validate(); err != nil {
		return err
	}
	return o.replicas.validateResync(o.statusResync)
}
