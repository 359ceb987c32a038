//go:build integration

package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The demo runs end to end, as `make mesh` runs it: one Mesh ACTIVE on the
// hub; each spoke's egress names the other spoke's ingress address, read
// from that spoke's own API server; both spokes hold the same generated
// trust bundle; deleting the instance leaves nothing of it on either spoke.
func TestMeshDemoConnectsTwoSpokes(t *testing.T) {
	fgtesting.SetupLogs()
	var out bytes.Buffer
	res, err := run(context.Background(), &out)
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
