package testing

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

const (
	// KubeVersion is the kube-apiserver version the fleet runs.
	KubeVersion = "v1.36.3"
	// EtcdVersion is the etcd version the fleet runs.
	EtcdVersion = "v3.6.14"
)

// ErrAssetsMissing is returned when the kube-apiserver or etcd binary cannot
// be found. Its message says how to build them.
var ErrAssetsMissing = errors.New("envtest binaries not found")

// AssetsDir returns the directory holding kube-apiserver and etcd: the
// KUBEBUILDER_ASSETS environment variable when set, else the cache directory
// hack/envtest/build.sh builds into ($FLEETGRAPH_CACHE, else
// $XDG_CACHE_HOME/fleetgraph, else ~/.cache/fleetgraph, then
// envtest/<kube>-etcd-<etcd>). It fails with ErrAssetsMissing when either
// binary is absent.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(cacheRoot(), "envtest", KubeVersion+"-etcd-"+EtcdVersion)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%w: no %s in %s; run `make envtest-assets` "+
				"(or hack/envtest/build.sh) to build them from the Go module proxy, "+
				"or set KUBEBUILDER_ASSETS", ErrAssetsMissing, bin, dir)
		}
	}
	return dir, nil
}

// CacheDir returns fleetgraph's cache root: $FLEETGRAPH_CACHE, else
// $XDG_CACHE_HOME/fleetgraph, else ~/.cache/fleetgraph.
func CacheDir() string { return cacheRoot() }

func cacheRoot() string {
	if dir := os.Getenv("FLEETGRAPH_CACHE"); dir != "" {
		return dir
	}
	if dir := os.Getenv("XDG_CACHE_HOME"); dir != "" {
		return filepath.Join(dir, "fleetgraph")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "fleetgraph-cache")
	}
	return filepath.Join(home, ".cache", "fleetgraph")
}
