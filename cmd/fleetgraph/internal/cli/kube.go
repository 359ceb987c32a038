package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// globals are what every command shares: the streams, and kubectl's
// flags to reach a cluster, which each command binds as far as it uses
// them (see bindConnection and bindKubeconfig).
type globals struct {
	streams    Streams
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
}

// FlagKubeconfigCluster names the kubeconfig cluster entry to use: what
// kubectl calls --cluster. Here --cluster always names a fleet cluster (a
// cluster the hub serves, by the provider's name for it), so the
// kubeconfig's is renamed rather than given two meanings.
const FlagKubeconfigCluster = "kubeconfig-cluster"

// connectionFlags are kubectl's flags to reach a cluster (kubectl's own
// names, so that they read the same under kubectl fleetgraph), with
// --cluster renamed FlagKubeconfigCluster.
func connectionFlags() clientcmd.ConfigOverrideFlags {
	f := clientcmd.RecommendedConfigOverrideFlags("")
	f.ContextOverrideFlags.ClusterName.LongName = FlagKubeconfigCluster
	f.ContextOverrideFlags.ClusterName.Description = "the kubeconfig cluster entry to use (kubectl's --cluster; here --cluster names a fleet cluster)"
	return f
}

// shownFlags are the connection flags the help of a command that reaches
// the hub shows; the others (credentials, impersonation, TLS) are listed
// by `options`, as kubectl does.
var shownFlags = map[string]bool{"kubeconfig": true, "context": true, "namespace": true, FlagKubeconfigCluster: true, "user": true, "request-timeout": true}

// bindConnection gives cmd and its subcommands every connection flag: the
// commands that read or write the hub (status, rollout).
func (g *globals) bindConnection(cmd *cobra.Command) {
	fs := cmd.PersistentFlags()
	fs.StringVar(&g.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	clientcmd.BindOverrideFlags(&g.overrides, fs, connectionFlags())
	fs.VisitAll(func(f *pflag.Flag) { f.Hidden = !shownFlags[f.Name] })
}

// bindKubeconfig gives an offline command the connection flags it uses:
// --kubeconfig and --context, for --schemas-from cluster and (with
// namespace) -n, else the context's namespace.
func (g *globals) bindKubeconfig(cmd *cobra.Command, namespace bool) {
	fs := cmd.Flags()
	fs.StringVar(&g.kubeconfig, "kubeconfig", "", "the kubeconfig file of --schemas-from cluster (default: $KUBECONFIG, else ~/.kube/config)")
	f := connectionFlags()
	f.CurrentContext.Description = "the kubeconfig context of --schemas-from cluster"
	if namespace {
		f.CurrentContext.Description += " and of the default namespace"
		f.ContextOverrideFlags.Namespace.Description = "the namespace of the instance (default: the context's, else \"default\")"
		f.ContextOverrideFlags.Namespace.BindTransformingStringFlag(fs, &g.overrides.Context.Namespace, clientcmd.RemoveNamespacesPrefix)
	}
	f.CurrentContext.BindStringFlag(fs, &g.overrides.CurrentContext)
}

// newOptionsCommand lists every connection flag, as kubectl options does.
func newOptionsCommand(name string) *cobra.Command {
	return &cobra.Command{
		Use:     "options",
		Short:   "List the flags status and rollout accept to reach the hub cluster",
		Example: example(name, "  fleetgraph options"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all := &cobra.Command{}
			(&globals{}).bindConnection(all)
			all.PersistentFlags().VisitAll(func(f *pflag.Flag) { f.Hidden = false })
			fmt.Fprintf(cmd.OutOrStdout(), "The following options can be passed to status, rollout and their subcommands:\n\n%s", all.PersistentFlags().FlagUsages())
			return nil
		},
	}
}

func (g *globals) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &g.overrides)
}

// restConfig is the config of the cluster the flags name.
func (g *globals) restConfig() (*rest.Config, error) {
	cfg, err := g.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reaching the cluster: %w", err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	return cfg, nil
}

// namespace is -n, else the context's namespace, else "default".
func (g *globals) namespace() string {
	ns, _, err := g.clientConfig().Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

// scheme knows the kinds the commands read and write on the hub.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// hubClient is a direct client of the cluster the flags name.
func (g *globals) hubClient() (client.Client, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, fmt.Errorf("reaching the cluster: %w", err)
	}
	return c, nil
}
