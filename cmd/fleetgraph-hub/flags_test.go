package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, args ...string) (options, error) {
	t.Helper()
	fs := flag.NewFlagSet("fleetgraph-hub", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return parseFlags(fs, args)
}

func TestFlagsDefaultToSecretSpokesWithSafeKubeconfigs(t *testing.T) {
	o, err := parse(t)
	require.NoError(t, err)
	assert.Equal(t, providerSecret, o.provider)
	assert.Equal(t, "fleetgraph-system", o.secretNamespace)
	assert.False(t, o.allowExecKubeconf, "kubeconfigs must not run programs unless asked")
	assert.False(t, o.leaderElect)
	assert.True(t, o.installRGDCRD)
}

func TestFlagsRefuseWhatCannotRun(t *testing.T) {
	for name, args := range map[string][]string{
		"unknown provider":        {"--provider=cluster-api"},
		"kcp without a parent":    {"--provider=kcp-workspaces"},
		"negative workers":        {"--workers=-1"},
		"a flag that is not ours": {"--no-such-flag"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, args...)
			assert.Error(t, err)
		})
	}
}

func TestFlagsAcceptEachProvider(t *testing.T) {
	for _, args := range [][]string{
		{"--provider=single"},
		{"--provider=secret", "--secret-namespace=spokes"},
		{"--provider=kcp-workspaces", "--kcp-parent=root:org", "--kcp-recursive"},
	} {
		_, err := parse(t, args...)
		assert.NoError(t, err, args)
	}
}
