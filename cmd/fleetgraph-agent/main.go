// Command fleetgraph-agent serves one spoke cluster in pull mode: it runs
// inside the cluster, reads from the hub what the cluster should serve,
// serves it with fleetgraph's instance runtime, and reports back. The hub
// never connects to the cluster; the agent holds a credential for the hub
// only (and its in-cluster credentials for its own cluster).
//
//	fleetgraph-agent --cluster=edge-1 --hub-kubeconfig-secret=fleetgraph-system/fleetgraph-hub
//	fleetgraph-agent --cluster=edge-1 --hub-kubeconfig=/etc/fleetgraph/hub.kubeconfig --kubeconfig=edge-1.kubeconfig
//
// The hub must run with pull mode on (sdk.PullOptions.Enable, or
// fleetgraph-hub --pull) and have a PullCluster named --cluster. See
// docs/guides/pull-mode.md for joining, rotating and removing a cluster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph-agent/internal/agent"
)

type options struct {
	cluster, hubKubeconfig, hubSecret, stateNamespace, metrics string
	renew, report, tokenTTL                                    time.Duration
	workers                                                    int
	zap                                                        zap.Options
}

func parseFlags(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	fs.StringVar(&o.cluster, "cluster", "", "the PullCluster's name on the hub (required)")
	fs.StringVar(&o.hubKubeconfig, "hub-kubeconfig", "", "a kubeconfig file for the hub (its token is rotated in memory only)")
	fs.StringVar(&o.hubSecret, "hub-kubeconfig-secret", "", "namespace/name of a Secret in this cluster whose key kubeconfig reaches the hub; rotated tokens are written back")
	fs.StringVar(&o.stateNamespace, "state-namespace", agent.DefaultStateNamespace, "namespace of this cluster holding the agent's state")
	fs.StringVar(&o.metrics, "metrics-bind-address", ":8080", `address of the metrics endpoint ("0" turns it off)`)
	fs.DurationVar(&o.renew, "renew-interval", agent.DefaultRenewInterval, "how often the heartbeat Lease is renewed")
	fs.DurationVar(&o.report, "report-interval", agent.DefaultReportInterval, "how often changes are reported to the hub")
	fs.DurationVar(&o.tokenTTL, "token-ttl", agent.DefaultTokenTTL, "life of each hub token the agent requests for itself (negative: no rotation)")
	fs.IntVar(&o.workers, "workers", 0, "instances reconciled at once per graph (0: the runtime's default)")
	o.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.cluster == "":
		return o, errors.New("--cluster is required")
	case (o.hubKubeconfig == "") == (o.hubSecret == ""):
		return o, errors.New("give exactly one of --hub-kubeconfig and --hub-kubeconfig-secret")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(flag.CommandLine, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fail(os.Stderr, err)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	local, err := ctrl.GetConfig()
	if err != nil {
		fail(os.Stderr, fmt.Errorf("this cluster's config: %w", err))
	}
	if err := run(ctrl.SetupSignalHandler(), local, o); err != nil {
		fail(os.Stderr, err)
	}
}

func fail(w io.Writer, err error) {
	fmt.Fprintln(w, "fleetgraph-agent:", err)
	os.Exit(1)
}

// run is main without the process.
func run(ctx context.Context, local *rest.Config, o options) error {
	hubCfg, secret, err := hubConfig(ctx, local, o)
	if err != nil {
		return err
	}
	opts := agent.Options{
		Cluster: o.cluster, Hub: hubCfg, Local: local, Credential: secret,
		StateNamespace: o.stateNamespace, RenewInterval: o.renew, ReportInterval: o.report,
		TokenTTL: o.tokenTTL, MetricsBindAddress: o.metrics,
	}
	opts.Spoke.Workers = o.workers
	a, err := agent.New(opts)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// hubConfig reads the hub's kubeconfig from the file or the Secret.
func hubConfig(ctx context.Context, local *rest.Config, o options) (*rest.Config, types.NamespacedName, error) {
	if o.hubKubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.hubKubeconfig)
		if err != nil {
			return nil, types.NamespacedName{}, fmt.Errorf("the hub kubeconfig %s: %w", o.hubKubeconfig, err)
		}
		return cfg, types.NamespacedName{}, nil
	}
	ns, name, ok := strings.Cut(o.hubSecret, "/")
	if !ok || ns == "" || name == "" {
		return nil, types.NamespacedName{}, fmt.Errorf("--hub-kubeconfig-secret %q: want namespace/name", o.hubSecret)
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	c, err := client.New(local, client.Options{})
	if err != nil {
		return nil, key, fmt.Errorf("a client of this cluster: %w", err)
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil {
		return nil, key, fmt.Errorf("reading the hub kubeconfig Secret %s: %w", key, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["kubeconfig"])
	if err != nil {
		return nil, key, fmt.Errorf("the hub kubeconfig in Secret %s: %w", key, err)
	}
	return cfg, key, nil
}
