//go:build integration

package schemas_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/discovery"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/schemas"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var update = flag.Bool("update", false, "rewrite snapshot/ from a real API server")

// groupVersionPath matches the documents that describe kinds: api/v1 and
// apis/<group>/<version>.
var groupVersionPath = regexp.MustCompile(`^(api/v1|apis/[^/]+/[^/]+)$`)

// The embedded snapshot is what a real kube-apiserver of the version the
// project runs serves for its built-in kinds (stripped of descriptions), so
// offline validation types child templates as the hub would. With -update
// it rewrites the snapshot.
func TestBuiltinSnapshotMatchesTheAPIServer(t *testing.T) {
	require.Equal(t, fgtesting.KubeVersion, schemas.KubernetesVersion, "the snapshot is of another Kubernetes version than the test servers: run this test with -update")
	cluster, err := fgtesting.StartCluster("snapshot", fgtesting.ClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop() })
	dc, err := discovery.NewDiscoveryClientForConfig(cluster.Config)
	require.NoError(t, err)
	paths, err := dc.OpenAPIV3().Paths()
	require.NoError(t, err)

	builtin, err := schemas.Builtin()
	require.NoError(t, err)
	var served []string
	for path, gv := range paths {
		if !groupVersionPath.MatchString(path) {
			continue
		}
		served = append(served, path)
		raw, err := gv.Schema("application/json")
		require.NoError(t, err)
		stripped, err := schemas.Strip(raw)
		require.NoError(t, err)
		if *update {
			gz, err := schemas.Gzip(stripped)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join("snapshot", schemas.SnapshotName(path)), gz, 0o644))
			continue
		}
		assert.JSONEq(t, string(stripped), string(builtin[path]), "the snapshot of %s differs from what the API server serves: run with -update", path)
	}
	if *update {
		return
	}
	var embedded []string
	for path := range builtin {
		embedded = append(embedded, path)
	}
	slices.Sort(served)
	slices.Sort(embedded)
	assert.Equal(t, served, embedded, "the snapshot's group-versions")
}
