package testing

import (
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AddUser provisions a user of the cluster with a client certificate and
// returns a config and a kubeconfig that authenticate as it. The API server
// authorizes with RBAC, so the user may do nothing until a role is bound to
// its name or one of its groups: this is how tests prove that a documented
// set of roles is enough.
func (c *Cluster) AddUser(name string, groups ...string) (*rest.Config, []byte, error) {
	u, err := c.env.AddUser(envtest.User{Name: name, Groups: groups}, c.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("adding user %q to cluster %q: %w", name, c.Name, err)
	}
	kubeconfig, err := u.KubeConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig of user %q on cluster %q: %w", name, c.Name, err)
	}
	cfg := u.Config()
	cfg.QPS, cfg.Burst = c.Config.QPS, c.Config.Burst
	return cfg, kubeconfig, nil
}
