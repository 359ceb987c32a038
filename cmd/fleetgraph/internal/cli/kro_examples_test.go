package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli"
)

// kroVersion is the kro release whose examples are checked (the oracle's,
// hack/krodiff).
const kroVersion = "v0.9.4"

// kroExamples returns kro's examples directory in the module cache,
// downloading the module through the Go module proxy when it is missing.
func kroExamples(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com", "kubernetes-sigs", "kro@"+kroVersion, "examples")
	if _, err := os.Stat(dir); err != nil {
		cmd := exec.Command("go", "mod", "download", "github.com/kubernetes-sigs/kro@"+kroVersion)
		cmd.Dir = filepath.Join("..", "..", "..", "..", "hack", "krodiff")
		msg, err := cmd.CombinedOutput()
		require.NoError(t, err, "downloading kro %s: %s", kroVersion, msg)
	}
	return dir
}

// kro's own examples (those the kro oracle compiles) validate without a
// cluster, in kro-portable mode too. The one refusal is a real mistake in
// kro's core-dns example: a selector key given twice, which YAML readers
// silently resolve to the second and v1alpha1.Load refuses.
func TestValidateKroExamplesWithoutACluster(t *testing.T) {
	dir := kroExamples(t)
	for _, strict := range []bool{false, true} {
		args := []string{"validate", filepath.Join(dir, "kubernetes"), filepath.Join(dir, "graph")}
		if strict {
			args = append(args, "--strict")
		}
		r := fleetgraph(t, args...)
		assert.Equal(t, cli.ExitFailed, r.code, r.String())
		errorLine := regexp.MustCompile(`(?m)^[^ ]+\.yaml:\d+: [^w]`)
		assert.Equal(t, []string{`core-dns.yaml:169: resource "service": template.spec.selector: given twice (first on line 154)`},
			trimDirs(errorLine.FindAllString(r.out, -1), r.out), "strict=%v", strict)
		assert.Contains(t, r.err, "12 ResourceGraphDefinitions in 27 files (17 documents of other kinds skipped): 1 invalid")
		assert.NotContains(t, r.out, "note:", "kro's examples use no fleetgraph extension")
	}
}

// trimDirs returns the whole lines the matches start, without their
// directories.
func trimDirs(starts []string, out string) []string {
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		for _, s := range starts {
			if strings.HasPrefix(line, s) {
				lines = append(lines, filepath.Base(line))
			}
		}
	}
	return lines
}
