//go:build integration

package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/examples/internal/keep/keeptest"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The demo runs end to end, as `make mesh` runs it: mesh.yaml, applied as
// YAML, is accepted by the hub's RGD controller; one Mesh ACTIVE on the
// hub; each spoke's egress names the other spoke's ingress address, read
// from that spoke's own API server; both spokes hold the same generated
// trust bundle; deleting the instance leaves nothing of it on either spoke.
func TestMeshDemoConnectsTwoSpokes(t *testing.T) {
	fgtesting.SetupLogs()
	var out bytes.Buffer
	res, err := run(context.Background(), &out, options{})
	require.NoError(t, err, out.String())
	assert.Equal(t, "ACTIVE", res.State)
	east, west := res.Sides["spoke-1"], res.Sides["spoke-2"]
	require.NotEmpty(t, east.IngressIP, out.String())
	require.NotEmpty(t, west.IngressIP, out.String())
	// Two API servers allocate from the same service range, so the two
	// addresses may coincide; the Services' UIDs cannot.
	assert.NotEqual(t, east.IngressUID, west.IngressUID)
	assert.Equal(t, west.IngressUID, east.UpstreamService, "spoke-1's egress was rendered from spoke-2's Service")
	assert.Equal(t, east.IngressUID, west.UpstreamService, "spoke-2's egress was rendered from spoke-1's Service")
	assert.Equal(t, west.IngressIP+":15443", east.Upstream, "spoke-1's egress points at spoke-2's ingress")
	assert.Equal(t, east.IngressIP+":15443", west.Upstream, "spoke-2's egress points at spoke-1's ingress")
	assert.Equal(t, "spoke-2", east.Peer)
	assert.Equal(t, "spoke-1", west.Peer)
	assert.Len(t, east.Bundle, 48)
	assert.Equal(t, east.Bundle, west.Bundle, "one trust bundle shared by both spokes")
	assert.True(t, res.Cleaned, "deleting the instance cleans both spokes")
	assert.Contains(t, out.String(), "Both spokes are clean")
}

// With -keep the fleet and the Mesh stay up, reachable through the merged
// kubeconfig's contexts: the Mesh is ACTIVE on the hub, each spoke holds
// its side, and deleting the Mesh through the hub's context cleans both
// spokes, since the hub still runs. Ctrl-C then stops the demo cleanly.
func TestTheKeptMeshFleetServesThroughItsKubeconfig(t *testing.T) {
	fgtesting.SetupLogs()
	ctx := context.Background()
	var out keeptest.Buffer
	files, stop := keeptest.Run(t, &out, func(ctx context.Context, kept func(fgtesting.KubeconfigFiles)) error {
		_, err := run(ctx, &out, options{keep: true, kept: kept})
		return err
	})
	assert.Contains(t, out.String(), "export KUBECONFIG="+files.Merged)
	assert.NotContains(t, out.String(), "Deleting Mesh", "a kept demo keeps its Mesh")

	d := &demo{out: io.Discard, hub: contextClient(t, files, "hub"), spokes: map[string]client.Client{}}
	for _, name := range []string{"spoke-1", "spoke-2"} {
		d.spokes[name] = contextClient(t, files, name)
	}
	assert.Equal(t, "ACTIVE", d.state(ctx))
	for name, role := range roles {
		s, err := d.side(ctx, name, "demo-", role)
		require.NoError(t, err, "%s holds its side of the Mesh", name)
		assert.Len(t, s.Bundle, 48)
	}
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(meshGVK)
	m.SetNamespace("default")
	m.SetName("demo")
	require.NoError(t, d.hub.Delete(ctx, m))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, d.leftOver(ctx, "demo-"))
	}, time.Minute, 200*time.Millisecond, "the kept hub cleans both spokes")
	stop()
}

// contextClient is a client for one context of the merged kubeconfig.
func contextClient(t *testing.T, files fgtesting.KubeconfigFiles, context string) client.Client {
	t.Helper()
	rc, err := files.RESTConfig(context)
	require.NoError(t, err)
	c, err := client.New(rc, client.Options{})
	require.NoError(t, err)
	return c
}
