//go:build integration

package krodiff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// minCorpus is the least number of RGDs the corpus must hold.
const minCorpus = 80

// probeRGD is admitted by both RGD CRDs; it tells when they are served.
const probeRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: probe}
spec:
  schema: {apiVersion: v1alpha1, kind: Probe, spec: {name: string}}
`

// TestCompileAgainstKro runs every corpus RGD through kro v0.9.4 and
// fleetgraph against one real API server and requires them to agree, up
// to the KnownDifferences table.
func TestCompileAgainstKro(t *testing.T) {
	inputs := corpusInputs(t)
	require.GreaterOrEqual(t, len(inputs), minCorpus, "the corpus is too small")
	assertTableNamesInputs(t, inputs)

	o := startOracle(t)
	ctx := context.Background()
	results := make([]Result, 0, len(inputs))
	for _, in := range inputs {
		kro, fg := o.Kro(ctx, in.raw), o.Fleetgraph(ctx, in.raw)
		r := Classify(in.name, Difference(kro, fg), KnownDifferences)
		r.Kro, r.Fleetgraph = kro, fg
		results = append(results, r)
		t.Run(strings.TrimSuffix(in.name, ".yaml"), func(t *testing.T) {
			reportResult(t, r, in.path)
			if !strings.HasPrefix(in.name, kroExamplePrefix) {
				for _, p := range NamingProblems(in.raw, fg) {
					t.Errorf("fleetgraph's rejection of %s does not point at what is wrong: %s\n(rejection: %v)", in.path, p, fg.Err)
				}
			}
		})
	}
	logSummary(t, results)
}

// input is one RGD to compile: name is its key in KnownDifferences.
type input struct {
	name, path string
	raw        []byte
}

// corpusInputs are testdata/corpus's files and the RGDs of kro v0.9.4's own
// examples (read from kro's module, Apache-2.0; named "kro/<path in the
// module>", with "#n" for the n-th RGD of a file holding several).
func corpusInputs(t *testing.T) []input {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.yaml"))
	require.NoError(t, err)
	var inputs []input
	for _, path := range files {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		inputs = append(inputs, input{name: filepath.Base(path), path: path, raw: raw})
	}
	dir, err := KroModuleDir()
	require.NoError(t, err)
	examples, err := KroExampleRGDs(dir)
	require.NoError(t, err)
	require.NotEmpty(t, examples, "no RGDs found in kro's examples")
	for _, ex := range examples {
		inputs = append(inputs, input{name: ex.Name, path: filepath.Join(dir, ex.Path), raw: ex.Raw})
	}
	return inputs
}

func assertTableNamesInputs(t *testing.T, inputs []input) {
	t.Helper()
	names := map[string]bool{}
	for _, in := range inputs {
		names[in.name] = true
	}
	for _, d := range KnownDifferences {
		assert.True(t, names[d.File], "KnownDifferences names %s, which is not in the corpus", d.File)
		assert.NotEmpty(t, d.Reason(), "KnownDifferences entry for %s has no reason", d.File)
	}
}

// startOracle starts one API server with both RGD CRDs and the corpus's
// custom child kinds, and returns an Oracle on it.
func startOracle(t *testing.T) *Oracle {
	t.Helper()
	cluster, err := fgtesting.StartCluster("krodiff", fgtesting.ClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cluster.Stop()) })

	crds, err := RGDCRDs()
	require.NoError(t, err)
	children, err := filepath.Glob(filepath.Join("testdata", "crds", "*.yaml"))
	require.NoError(t, err)
	childGVKs := []schema.GroupVersionKind{}
	for _, path := range children {
		crd, err := ReadCRD(path)
		require.NoError(t, err)
		crds = append(crds, crd)
		for _, v := range crd.Spec.Versions {
			childGVKs = append(childGVKs, schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind})
		}
	}
	ctx := context.Background()
	require.NoError(t, InstallCRDs(ctx, cluster.Config, crds...))
	waitUntilServed(t, cluster, childGVKs)

	o, err := NewOracle(cluster.Config)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		k, f := o.Kro(ctx, []byte(probeRGD)), o.Fleetgraph(ctx, []byte(probeRGD))
		return !isNotFound(k) && !isNotFound(f)
	}, time.Minute, 200*time.Millisecond, "the RGD CRDs are not served")
	return o
}

// waitUntilServed waits until the child CRDs' schemas are published in
// OpenAPI, so that neither compiler sees a kind half-installed.
func waitUntilServed(t *testing.T, cluster *fgtesting.Cluster, gvks []schema.GroupVersionKind) {
	t.Helper()
	for _, gvk := range gvks {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			res, err := resolver.NewForConfig(cluster.Config, resolver.Options{})
			require.NoError(c, err)
			_, err = res.ResolveSchema(gvk)
			assert.NoError(c, err)
		}, time.Minute, 250*time.Millisecond, "OpenAPI never published %s", gvk)
	}
}

func isNotFound(v Verdict) bool {
	return v.Stage == StageAdmission && apierrors.IsNotFound(v.Err)
}

// logSummary prints one line per file and the counts.
func logSummary(t *testing.T, results []Result) {
	t.Helper()
	sort.Slice(results, func(i, j int) bool { return results[i].File < results[j].File })
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "%-11s %-48s kro: %s\n%61s fleetgraph: %s\n", r.Outcome, r.File, short(r.Kro), "", short(r.Fleetgraph))
	}
	t.Logf("per file:\n%s", b.String())
	fmt.Printf("krodiff: corpus %s\n", Count(results))
}

func short(v Verdict) string {
	s := v.String()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// reportResult fails t for unexplained and stale results, naming what the
// table lacks or holds in excess.
func reportResult(t *testing.T, r Result, path string) {
	t.Helper()
	switch r.Outcome {
	case Unexplained:
		t.Errorf("fleetgraph differs from kro v0.9.4 on %s; the known-differences table does not cover:\n%s\nall differences:\n%s",
			path, indented(r.Unexplained), indented(r.Diff))
	case Stale:
		t.Errorf("the known-differences table lists %s (%q) but fleetgraph and kro agree on it now: remove the entry", r.File, r.Reason)
	case Explained:
		t.Logf("known difference: %s\n%s", r.Reason, indented(r.Diff))
	}
}
