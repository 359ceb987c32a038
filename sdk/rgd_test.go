package sdk_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// readRGD decodes an RGD file strictly, as the API server would.
func readRGD(t testing.TB, file string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(raw, rgd))
	return rgd
}
