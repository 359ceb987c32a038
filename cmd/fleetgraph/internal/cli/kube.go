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

// globals are the flags every command has: kubectl's way to reach a
// cluster.
type globals struct {
	streams    Streams
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
}

// shownFlags are the connection flags every command's help shows; the
// others (credentials, impersonation, TLS) are listed by `options`, as
// kubectl does.
var shownFlags = map[string]bool{"kubeconfig": true, "context": true, "namespace": true, "cluster": true, "user": true, "request-timeout": true}

func (g *globals) bindFlags(root *cobra.Command) {
	fs := root.PersistentFlags()
	fs.StringVar(&g.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	clientcmd.BindOverrideFlags(&g.overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	fs.VisitAll(func(f *pflag.Flag) { f.Hidden = !shownFlags[f.Name] })
}

// newOptionsCommand lists every connection flag, as kubectl options does.
func newOptionsCommand(root *cobra.Command, name string) *cobra.Command {
	return &cobra.Command{
		Use:     "options",
		Short:   "List the flags every command accepts to reach a cluster",
		Example: example(name, "  fleetgraph options"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all := pflag.NewFlagSet("options", pflag.ContinueOnError)
			root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
				shown := *f
				shown.Hidden = false
				all.AddFlag(&shown)
			})
			fmt.Fprintf(cmd.OutOrStdout(), "The following options can be passed to any command:\n\n%s", all.FlagUsages())
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
