package sdk_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// readRGD loads the one RGD of a file strictly (v1alpha1.LoadFile).
func readRGD(t testing.TB, file string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	rgds, err := v1alpha1.LoadFile(file)
	require.NoError(t, err)
	require.Len(t, rgds, 1, file)
	return rgds[0]
}
