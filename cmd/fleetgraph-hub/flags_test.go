package main

import (
	"flag"
	"io"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/spoke"
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
	safety, err := o.kubeconfigs.safety()
	require.NoError(t, err)
	assert.Equal(t, secret.Safety{}, safety, "kubeconfigs may do nothing unsafe unless asked")
	assert.False(t, o.leaderElect)
	assert.True(t, o.installRGDCRD)
}

func TestFlagsRefuseWhatCannotRun(t *testing.T) {
	for name, args := range map[string][]string{
		"unknown provider":           {"--provider=cluster-api"},
		"kcp without a parent":       {"--provider=kcp-workspaces"},
		"negative workers":           {"--workers=-1"},
		"a malformed CIDR":           {"--spoke-denied-cidrs=0.0.0.0/0,nope"},
		"a flag that is not ours":    {"--no-such-flag"},
		"pull with sharded replicas": {"--pull", "--replicas-shard"},
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

// Without --replicas-shard the hub is the only replica: no coordinator, no
// status records, departures cleaned up as before.
func TestFlagsReplicasOffByDefault(t *testing.T) {
	o, err := parse(t)
	require.NoError(t, err)
	assert.False(t, o.replicas.shard)
	assert.Empty(t, o.replicas.id)
	opts, err := o.replicas.coordinator(nil)
	require.NoError(t, err)
	assert.Empty(t, opts)
	assert.Equal(t, sdk.Options{Instances: spoke.Options{Workers: 3}}, o.replicas.hubOptions(sdk.Options{Instances: spoke.Options{Workers: 3}}))
}

// A sharded replica's identity defaults to $POD_NAME, else the host name;
// its timings default to the coordinator's and reach both the coordinator
// and the Hub.
func TestFlagsShardedReplicaDefaults(t *testing.T) {
	t.Setenv("POD_NAME", "")
	host, err := os.Hostname()
	require.NoError(t, err)
	o, err := parse(t, "--replicas-shard")
	require.NoError(t, err)
	assert.Equal(t, host, o.replicas.id)
	assert.Equal(t, sdk.ShardingOptions{ID: host, Namespace: "kube-system", LeaseDuration: 20 * time.Second, Probe: 5 * time.Second},
		o.replicas.sharding())
	h := o.replicas.hubOptions(sdk.Options{Instances: spoke.Options{Workers: 3}})
	assert.Equal(t, sdk.Options{Instances: spoke.Options{Workers: 3}, Fleet: sdk.FleetOptions{DepartureGrace: -1}, Replicas: sdk.ReplicaOptions{ID: host, Namespace: "kube-system", StatusTTL: time.Minute}}, h)

	t.Setenv("POD_NAME", "fleetgraph-hub-7d9f-x2k")
	o, err = parse(t, "--replicas-shard")
	require.NoError(t, err)
	assert.Equal(t, "fleetgraph-hub-7d9f-x2k", o.replicas.id)
}

func TestFlagsShardedReplicaExplicit(t *testing.T) {
	o, err := parse(t, "--replicas-shard", "--replica-id=r1", "--shard-namespace=fleetgraph-system",
		"--shard-lease-duration=6s", "--shard-renew-interval=2s", "--shard-probe=1s", "--replica-status-ttl=30s", "--status-resync=1s")
	require.NoError(t, err)
	assert.Equal(t, sdk.ShardingOptions{ID: "r1", Namespace: "fleetgraph-system", LeaseDuration: 6 * time.Second, RenewInterval: 2 * time.Second, Probe: time.Second},
		o.replicas.sharding())
	assert.Equal(t, 8*time.Second, o.replicas.sharding().TakeoverBound(), "lease + 2 × min(renew, probe)")
	assert.Equal(t, time.Second, o.statusResync)
	h := o.replicas.hubOptions(sdk.Options{})
	assert.Equal(t, "r1", h.Replicas.ID)
	assert.Equal(t, "fleetgraph-system", h.Replicas.Namespace)
	assert.Equal(t, 30*time.Second, h.Replicas.StatusTTL)
}

func TestFlagsRefuseReplicasThatCannotWork(t *testing.T) {
	for name, args := range map[string][]string{
		"with leader election":    {"--replicas-shard", "--leader-elect"},
		"renew not below lease":   {"--replicas-shard", "--shard-lease-duration=5s", "--shard-renew-interval=5s"},
		"zero lease":              {"--replicas-shard", "--shard-lease-duration=0"},
		"zero probe":              {"--replicas-shard", "--shard-probe=0"},
		"status TTL within bound": {"--replicas-shard", "--shard-lease-duration=20s", "--replica-status-ttl=30s"},
		"negative renew interval": {"--replicas-shard", "--shard-renew-interval=-1s"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, args...)
			assert.Error(t, err)
		})
	}
}

func TestKubeconfigFlagsRelaxTheProvidersSafety(t *testing.T) {
	o, err := parse(t, "--allow-exec-kubeconfigs", "--allow-kubeconfig-proxy", "--allow-insecure-kubeconfigs",
		"--allow-plain-http-kubeconfigs", "--allow-loopback-spokes", "--allow-link-local-spokes", "--deny-private-spokes",
		"--spoke-allowed-cidrs=10.1.0.0/16, fd00::/8", "--spoke-denied-cidrs=0.0.0.0/0,::/0")
	require.NoError(t, err)
	safety, err := o.kubeconfigs.safety()
	require.NoError(t, err)
	assert.Equal(t, secret.Safety{
		AllowExec: true, AllowAuthProvider: true, AllowLocalFiles: true,
		AllowProxyURL: true, AllowInsecureTLS: true, AllowPlainHTTP: true,
		AllowLoopback: true, AllowLinkLocal: true, DenyPrivate: true,
		AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::/8")},
		DeniedCIDRs:  []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")},
	}, safety)
}
