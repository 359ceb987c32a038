//go:build integration

package shard_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// TestReplicasShareTheFleetOnARealHub is the fleet scenario against a
// real API server: its lists are what linearizable reads are, and its
// Leases keep the times the replicas wrote.
func TestReplicasShareTheFleetOnARealHub(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 0)
	c, err := client.NewWithWatch(fleet.Hub.Config, client.Options{})
	require.NoError(t, err)
	runFleetScenario(t, c)
}
