//go:build integration

package krodiff

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// minPublic is the least number of public RGDs the corpus must hold.
const minPublic = 100

// The sources list names only files that can be attributed: a repository,
// a commit and a path each, and no file twice.
func TestPublicSourcesAreAttributed(t *testing.T) {
	sources, err := ReadSources(SourcesFile)
	require.NoError(t, err)
	files := map[string]bool{}
	repos := map[string]bool{}
	for _, s := range sources {
		repo, rest, _ := strings.Cut(s.Origin, "@")
		commit, path, _ := strings.Cut(rest, ":")
		assert.Regexp(t, `^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`, repo, s.Origin)
		assert.Regexp(t, `^[0-9a-f]{40}$`, commit, s.Origin)
		assert.NotEmpty(t, path, s.Origin)
		assert.False(t, strings.HasPrefix(repo, "kubernetes-sigs/kro"), "kro's own files are read from its module, not listed: %s", s.Origin)
		assert.False(t, files[s.File], "%s is listed twice", s.File)
		files[s.File] = true
		repos[repo] = true
	}
	t.Logf("%d files from %d repositories", len(sources), len(repos))
}

// TestCompileAgainstKroOnPublicRGDs runs the public corpus (RGDs others
// wrote, listed in SourcesFile, copied into $KRODIFF_PUBLIC_CORPUS) through
// kro v0.9.4 and fleetgraph as TestCompileAgainstKro runs its corpus, with
// stub CRDs for the custom child kinds they use, and the CRDs kro generates
// for the kinds the corpus itself generates. It requires them to agree up
// to PublicDifferences and, above all, that fleetgraph refuses none that
// kro accepts.
func TestCompileAgainstKroOnPublicRGDs(t *testing.T) {
	dir := os.Getenv(PublicCorpusEnv)
	if dir == "" {
		t.Skipf("%s is not set: the public corpus's files are not in this repository (see %s)", PublicCorpusEnv, SourcesFile)
	}
	sources, err := ReadSources(SourcesFile)
	require.NoError(t, err)
	rgds, err := PublicRGDs(dir, sources)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(rgds), minPublic, "the public corpus is too small")
	names := map[string]bool{}
	for _, r := range rgds {
		names[r.Name] = true
	}
	for _, d := range PublicDifferences {
		assert.True(t, names[d.File], "PublicDifferences names %s, which is not in the public corpus", d.File)
	}

	cluster := startPublicCluster(t, rgds)
	o, err := NewOracle(cluster.Config)
	require.NoError(t, err)
	ctx := context.Background()
	results := make([]Result, 0, len(rgds))
	kroAccepted, fgRefusedKroValid := 0, 0
	for _, r := range rgds {
		kro, fg := o.Kro(ctx, r.Raw), o.Fleetgraph(ctx, r.Raw)
		res := Classify(r.Name, Difference(kro, fg), PublicDifferences)
		res.Kro, res.Fleetgraph = kro, fg
		results = append(results, res)
		if kro.Accepted {
			kroAccepted++
			if !fg.Accepted {
				fgRefusedKroValid++
				t.Errorf("fleetgraph refuses %s (%s), which kro v0.9.4 accepts: %v", r.Name, r.Origin, firstLines(fg.Err, 3))
			}
		}
		t.Run(strings.TrimPrefix(r.Name, publicPrefix), func(t *testing.T) { reportResult(t, res, r.Origin) })
	}
	logSummary(t, results)
	t.Logf("public corpus: %d RGDs; kro accepts %d, fleetgraph refuses %d of those", len(rgds), kroAccepted, fgRefusedKroValid)
}

// startPublicCluster starts an API server with both RGD CRDs, stub CRDs
// for the public corpus's custom child kinds, and, for each kind an RGD of
// the corpus generates and another uses, the CRD kro generates for it.
func startPublicCluster(t *testing.T, rgds []PublicRGD) *fgtesting.Cluster {
	t.Helper()
	cluster, err := fgtesting.StartCluster("krodiff-public", fgtesting.ClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cluster.Stop()) })
	ctx := context.Background()
	crds, err := RGDCRDs()
	require.NoError(t, err)
	require.NoError(t, InstallCRDs(ctx, cluster.Config, crds...))

	res, err := resolver.NewForConfig(cluster.Config, resolver.Options{})
	require.NoError(t, err)
	served := func(gvk schema.GroupVersionKind) bool { _, err := res.ResolveSchema(gvk); return err == nil }
	raws := make([][]byte, len(rgds))
	for i, r := range rgds {
		raws[i] = r.Raw
	}
	stubs := StubCRDs(raws, served)
	require.NoError(t, InstallCRDs(ctx, cluster.Config, stubs...))

	// The kinds the corpus generates and uses: their RGDs compile first,
	// on an oracle of their own, and kro's CRD for each is installed.
	used := UsedKinds(raws)
	o := startedOracle(t, cluster)
	var generated []*apiextensionsv1.CustomResourceDefinition
	for _, r := range rgds {
		gvk, ok := GeneratedKind(r.Raw)
		if !ok || !used[gvk.GroupKind()] {
			continue
		}
		if v := o.Kro(ctx, r.Raw); v.Accepted {
			raw, err := json.Marshal(v.CRD)
			require.NoError(t, err)
			crd := &apiextensionsv1.CustomResourceDefinition{}
			require.NoError(t, json.Unmarshal(raw, crd))
			generated = append(generated, crd)
		}
	}
	require.NoError(t, InstallCRDs(ctx, cluster.Config, generated...))
	var gvks []schema.GroupVersionKind
	for _, crd := range append(stubs, generated...) {
		for _, v := range crd.Spec.Versions {
			gvks = append(gvks, schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind})
		}
	}
	waitUntilServed(t, cluster, gvks)
	t.Logf("installed %d stub CRDs and %d CRDs the corpus generates", len(stubs), len(generated))
	return cluster
}

// startedOracle is an Oracle on cluster once both RGD CRDs are served.
func startedOracle(t *testing.T, cluster *fgtesting.Cluster) *Oracle {
	t.Helper()
	o, err := NewOracle(cluster.Config)
	require.NoError(t, err)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		k, f := o.Kro(ctx, []byte(probeRGD)), o.Fleetgraph(ctx, []byte(probeRGD))
		return !isNotFound(k) && !isNotFound(f)
	}, time.Minute, 200*time.Millisecond, "the RGD CRDs are not served")
	return o
}
