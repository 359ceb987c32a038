package testing

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ClusterOptions configures one real test cluster.
type ClusterOptions struct {
	// APIServerFlags are extra kube-apiserver flags, e.g.
	// {"service-cluster-ip-range": "10.96.0.0/16"} for benchmarks that create
	// many Services (envtest's default range holds 254). Defaults to none.
	APIServerFlags map[string]string
	// StartTimeout bounds how long kube-apiserver and etcd may take to start
	// each. Defaults to 90 seconds (a 2-core machine starting four at once
	// needs more than envtest's 20).
	StartTimeout time.Duration
}

// Cluster is one real kube-apiserver and etcd pair, listening on loopback.
type Cluster struct {
	// Name identifies the cluster in the fleet ("hub", "spoke-1", ...).
	Name string
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Kubeconfig holds the same credentials as a kubeconfig file with
	// embedded certificates, e.g. for a kubeconfig Secret or kubectl.
	Kubeconfig []byte

	env *envtest.Environment
}

// StartCluster starts a real API server named name. Stop it with Stop.
func StartCluster(name string, opts ClusterOptions) (*Cluster, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: opts.StartTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	// Keep the test server on loopback: by default it advertises the
	// machine's address in the default/kubernetes Service.
	args.Set("advertise-address", "127.0.0.1")
	for k, v := range opts.APIServerFlags {
		args.Set(k, v)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting API server for cluster %q: %w", name, err)
	}
	// Test servers are local and private: lift client-go's default 5 QPS
	// so that benchmarks measure the controllers, not the rate limiter.
	cfg.QPS, cfg.Burst = 500, 1000
	return &Cluster{Name: name, Config: cfg, Kubeconfig: env.KubeConfig, env: env}, nil
}

// Stop stops the API server and etcd and removes their data.
func (c *Cluster) Stop() error {
	if err := c.env.Stop(); err != nil {
		return fmt.Errorf("stopping cluster %q: %w", c.Name, err)
	}
	return nil
}
