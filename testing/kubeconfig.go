package testing

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MergedKubeconfigFile is the name WriteKubeconfigs gives the kubeconfig
// that holds every cluster.
const MergedKubeconfigFile = "fleet.kubeconfig"

// ErrDuplicateCluster is returned by MergeKubeconfigs and WriteKubeconfigs
// when two clusters have the same name; match it with errors.Is.
var ErrDuplicateCluster = errors.New("two clusters have the same name")

// KubeconfigFiles are the files WriteKubeconfigs wrote.
type KubeconfigFiles struct {
	// Merged is the path of the kubeconfig with one context per cluster.
	Merged string
	// Clusters maps each cluster's name to the path of a kubeconfig of its
	// own, whose only context has the cluster's name.
	Clusters map[string]string
}

// RESTConfig reaches the named context's cluster as the merged kubeconfig
// says, as `kubectl --context name` would.
func (f KubeconfigFiles) RESTConfig(context string) (*rest.Config, error) {
	cfg, err := clientcmd.LoadFromFile(f.Merged)
	if err != nil {
		return nil, err
	}
	if cfg.Contexts[context] == nil {
		return nil, fmt.Errorf("%s has no context %q", f.Merged, context)
	}
	return clientcmd.NewNonInteractiveClientConfig(*cfg, context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
}

// Clusters returns the hub followed by the running spokes, in the order
// they were started.
func (f *Fleet) Clusters() []*Cluster {
	return append([]*Cluster{f.Hub}, f.Spokes()...)
}

// MergeKubeconfigs returns one kubeconfig that holds every given cluster:
// a cluster entry, a user and a context, each named after the cluster
// ("hub", "spoke-1", ...), so that `kubectl --context spoke-1` reaches that
// spoke. Its current context is the first cluster's. Each cluster's own
// Kubeconfig is read at its current context; credentials are embedded as
// they are there.
func MergeKubeconfigs(clusters ...*Cluster) ([]byte, error) {
	if len(clusters) == 0 {
		return nil, errors.New("merging kubeconfigs: no cluster given")
	}
	out := clientcmdapi.NewConfig()
	for _, c := range clusters {
		if _, dup := out.Contexts[c.Name]; dup {
			return nil, fmt.Errorf("merging kubeconfigs: %q: %w", c.Name, ErrDuplicateCluster)
		}
		if err := addCluster(out, c); err != nil {
			return nil, err
		}
	}
	out.CurrentContext = clusters[0].Name
	raw, err := clientcmd.Write(*out)
	if err != nil {
		return nil, fmt.Errorf("merging kubeconfigs: %w", err)
	}
	return raw, nil
}

// addCluster copies the current context of c's kubeconfig into out under
// c's name.
func addCluster(out *clientcmdapi.Config, c *Cluster) error {
	in, err := clientcmd.Load(c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("reading the kubeconfig of cluster %q: %w", c.Name, err)
	}
	cur := in.Contexts[in.CurrentContext]
	if cur == nil {
		return fmt.Errorf("the kubeconfig of cluster %q has no current context", c.Name)
	}
	cluster, user := in.Clusters[cur.Cluster], in.AuthInfos[cur.AuthInfo]
	if cluster == nil || user == nil {
		return fmt.Errorf("the kubeconfig of cluster %q: context %q names a missing cluster or user", c.Name, in.CurrentContext)
	}
	ctx := clientcmdapi.NewContext()
	ctx.Cluster, ctx.AuthInfo, ctx.Namespace = c.Name, c.Name, cur.Namespace
	out.Clusters[c.Name], out.AuthInfos[c.Name], out.Contexts[c.Name] = cluster, user, ctx
	return nil
}

// WriteKubeconfigs writes into dir, which must exist, the merged
// kubeconfig of every given cluster (MergedKubeconfigFile, see
// MergeKubeconfigs) and one kubeconfig per cluster (<name>.kubeconfig,
// its context named after the cluster), each readable by its owner only:
// they hold the clusters' admin credentials.
func WriteKubeconfigs(dir string, clusters ...*Cluster) (KubeconfigFiles, error) {
	files := KubeconfigFiles{Merged: filepath.Join(dir, MergedKubeconfigFile), Clusters: map[string]string{}}
	merged, err := MergeKubeconfigs(clusters...)
	if err != nil {
		return KubeconfigFiles{}, err
	}
	for _, c := range clusters {
		if c.Name == "" || filepath.Base(c.Name) != c.Name {
			return KubeconfigFiles{}, fmt.Errorf("writing kubeconfigs: cluster name %q is not a file name", c.Name)
		}
		own, err := MergeKubeconfigs(c)
		if err != nil {
			return KubeconfigFiles{}, err
		}
		path := filepath.Join(dir, c.Name+".kubeconfig")
		if err := os.WriteFile(path, own, 0o600); err != nil {
			return KubeconfigFiles{}, err
		}
		files.Clusters[c.Name] = path
	}
	if err := os.WriteFile(files.Merged, merged, 0o600); err != nil {
		return KubeconfigFiles{}, err
	}
	return files, nil
}
